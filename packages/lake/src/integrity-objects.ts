import { INTEGRITY_ACTIONS, SELF_SOURCE, type StoredEvent } from '@auditlake/model';
import { encodeKeyNumber } from './key-number.js';
import type { ObjectStore } from './object-store.js';
import { joinKey } from './s3-location.js';

/** The folder beside a tier's data (Parquet prefix, Iceberg table location) holding its proof. */
export const INTEGRITY_DIR = '_integrity';

/**
 * Iceberg snapshot summary key holding the newest signed checkpoint tiered so far (carried
 * from snapshot to snapshot), so a table's own metadata says how far its chain must reach.
 */
export const CHECKPOINT_SUMMARY_KEY = 'auditlake.integrity.checkpoint';

/** The signed checkpoint texts and published key texts a tier's `_integrity/` folder holds. */
export interface IntegrityObjects {
  checkpoints: Array<{ key: string; text: string }>;
  keys: Array<{ key: string; text: string }>;
}

function isSelf(event: StoredEvent, action: string): boolean {
  return event.source === SELF_SOURCE && event.action === action;
}

/** The newest checkpoint record's signed text in `batch`, if it has one. */
export function latestCheckpointText(batch: readonly StoredEvent[]): string | undefined {
  for (let i = batch.length - 1; i >= 0; i--) {
    const event = batch[i] as StoredEvent;
    if (isSelf(event, INTEGRITY_ACTIONS.checkpoint)) return event.details;
  }
  return undefined;
}

/**
 * Writes, beside the tier under `prefix`, one digest object per checkpoint record in `batch`
 * (`_integrity/checkpoints/<record seq>.json`, the signed checkpoint as recorded) and one per
 * key registration (`_integrity/keys/<record seq>.json`, the published key). Written after the
 * batch's commit: a verifier that finds a checkpoint here whose records the tier lacks reports
 * a truncated tier, and one that finds the records of a checkpoint here can check they
 * were not cut. Objects are named by record seq, so a retried batch rewrites the same names.
 */
export async function writeIntegrityObjects(objects: ObjectStore, prefix: string, batch: readonly StoredEvent[]): Promise<number> {
  let written = 0;
  for (const event of batch) {
    let folder: string | undefined;
    if (isSelf(event, INTEGRITY_ACTIONS.checkpoint)) folder = 'checkpoints';
    else if (isSelf(event, INTEGRITY_ACTIONS.registerKey)) folder = 'keys';
    if (folder === undefined) continue;
    await objects.put(joinKey(prefix, `${INTEGRITY_DIR}/${folder}/${encodeKeyNumber(event.seq)}.json`), event.details, 'application/json');
    written++;
  }
  return written;
}

/** Every checkpoint and key object beside the tier under `prefix`, in key order. */
export async function readIntegrityObjects(objects: ObjectStore, prefix: string): Promise<IntegrityObjects> {
  const read = async (folder: string) => {
    const found: Array<{ key: string; text: string }> = [];
    const listPrefix = joinKey(prefix, `${INTEGRITY_DIR}/${folder}/`);
    let startAfter: string | undefined;
    for (;;) {
      const keys = await objects.list(listPrefix, startAfter === undefined ? {} : { startAfter });
      if (keys.length === 0) break;
      for (const key of keys) found.push({ key, text: new TextDecoder().decode(await objects.get(key)) });
      startAfter = keys.at(-1);
    }
    return found;
  };
  return { checkpoints: await read('checkpoints'), keys: await read('keys') };
}
