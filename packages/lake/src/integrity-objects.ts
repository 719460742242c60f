import { AuditError, AuditErrorCode, INTEGRITY_ACTIONS, SELF_SOURCE, type StoredEvent } from '@auditlake/model';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { deleteWhileLeader } from './fenced-delete.js';
import type { CommitFence } from './iceberg-version-commit.js';
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

/** Folders under INTEGRITY_DIR: one object per checkpoint record, per key registration, per pack of checkpoints. */
const CHECKPOINTS_FOLDER = 'checkpoints';
const KEYS_FOLDER = 'keys';
const PACKS_FOLDER = 'checkpoint-packs';

/** The `format` member of a checkpoint pack (docs/integrity.md, "Checkpoint packs"). */
export const CHECKPOINT_PACK_FORMAT = 'auditlake-checkpoint-pack/1';
/** When and how much {@link packIntegrityCheckpoints} packs. */
export interface CheckpointPackLimits {
  /** Fewer loose checkpoint objects than this are left alone: not worth a pack. */
  looseMin: number;
  /** Most checkpoints in one pack. */
  packSizeMax: number;
  /** Most loose checkpoints one run packs: a tier with a long backlog is packed over several runs. */
  perRunMax: number;
}

/** A pack a day at one checkpoint a minute; a pack of ~0.5 KB checkpoints stays a few MB. */
export const CHECKPOINT_PACK_LIMITS: CheckpointPackLimits = { looseMin: 1_000, packSizeMax: 10_000, perRunMax: 50_000 };

/** A signed checkpoint or published key text found beside a tier, and where (for a verifier's messages). */
export interface FoundIntegrityText {
  text: string;
  /** The object's URL; for a packed checkpoint, the pack's URL and the record seq. */
  where: string;
}

/** The signed checkpoint texts and published key texts a tier's `_integrity/` folder holds. */
export interface IntegrityObjects {
  /** Packed, then loose. */
  checkpoints: FoundIntegrityText[];
  keys: FoundIntegrityText[];
}

/** A checkpoint pack's content: the checkpoint records' signed texts, by record seq. */
interface CheckpointPack {
  format: typeof CHECKPOINT_PACK_FORMAT;
  checkpoints: Array<{ seq: number; checkpoint: string }>;
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
    if (isSelf(event, INTEGRITY_ACTIONS.checkpoint)) folder = CHECKPOINTS_FOLDER;
    else if (isSelf(event, INTEGRITY_ACTIONS.registerKey)) folder = KEYS_FOLDER;
    if (folder === undefined) continue;
    await objects.put(joinKey(prefix, `${INTEGRITY_DIR}/${folder}/${encodeKeyNumber(event.seq)}.json`), event.details, 'application/json');
    written++;
  }
  return written;
}

/** Every key under `prefix`, listed page by page. */
async function listAll(objects: ObjectStore, prefix: string): Promise<string[]> {
  const found: string[] = [];
  let startAfter: string | undefined;
  for (;;) {
    const keys = await objects.list(prefix, startAfter === undefined ? {} : { startAfter });
    if (keys.length === 0) return found;
    found.push(...keys);
    startAfter = keys.at(-1);
  }
}

/** The objects' texts, a few GETs in flight at once (a year of loose checkpoints is ~500,000 objects). */
async function readTexts(objects: ObjectStore, keys: readonly string[]): Promise<string[]> {
  const decoder = new TextDecoder();
  return mapBounded(keys, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (key) => decoder.decode(await objects.get(key)));
}

/** The record seq a loose checkpoint object is named by (`<16 digits>.json`), or undefined. */
function seqOfLooseKey(key: string): number | undefined {
  const match = /(\d{16})\.json$/.exec(key);
  return match === null ? undefined : Number(match[1]);
}

/** A pack's content, or an error naming what is wrong with it: a damaged pack hides the checkpoints it held. */
function parsePack(text: string, where: string): CheckpointPack {
  const damaged = (why: string) => new AuditError(AuditErrorCode.TABLE_INVALID, `the checkpoint pack ${where} is damaged: ${why}`);
  let pack: unknown;
  try {
    pack = JSON.parse(text);
  } catch (err) {
    throw damaged((err as Error).message);
  }
  if (typeof pack !== 'object' || pack === null || (pack as CheckpointPack).format !== CHECKPOINT_PACK_FORMAT) throw damaged(`not a ${CHECKPOINT_PACK_FORMAT} object`);
  const entries = (pack as CheckpointPack).checkpoints;
  if (!Array.isArray(entries)) throw damaged('no checkpoints array');
  for (const entry of entries as unknown[]) {
    const { seq, checkpoint } = (entry ?? {}) as { seq?: unknown; checkpoint?: unknown };
    if (!Number.isSafeInteger(seq) || (seq as number) < 1 || typeof checkpoint !== 'string') throw damaged(`entry ${JSON.stringify(entry)} is not {seq, checkpoint}`);
  }
  return pack as CheckpointPack;
}

/**
 * Every checkpoint and key beside the tier under `prefix`: loose checkpoint objects, the packs
 * maintenance made of older ones ({@link packIntegrityCheckpoints}), and key objects. A
 * checkpoint both loose and packed (a run that wrote its pack and stopped before deleting the
 * loose objects) is given twice; the verifier counts a checkpoint once by its hash.
 */
export async function readIntegrityObjects(objects: ObjectStore, prefix: string): Promise<IntegrityObjects> {
  const folder = (name: string) => joinKey(prefix, `${INTEGRITY_DIR}/${name}/`);
  const [looseKeys, packKeys, keyKeys] = await Promise.all([listAll(objects, folder(CHECKPOINTS_FOLDER)), listAll(objects, folder(PACKS_FOLDER)), listAll(objects, folder(KEYS_FOLDER))]);
  const [looseTexts, packTexts, keyTexts] = await Promise.all([readTexts(objects, looseKeys), readTexts(objects, packKeys), readTexts(objects, keyKeys)]);
  const found = (keys: readonly string[], texts: readonly string[]) => keys.map((key, i) => ({ text: texts[i] as string, where: objects.url(key) }));
  const packed = packKeys.flatMap((key, i) => {
    const url = objects.url(key);
    return parsePack(packTexts[i] as string, url).checkpoints.map(({ seq, checkpoint }) => ({ text: checkpoint, where: `${url} (record seq ${seq})` }));
  });
  return { checkpoints: [...packed, ...found(looseKeys, looseTexts)], keys: found(keyKeys, keyTexts) };
}

/**
 * Packs loose checkpoint objects beside the tier under `prefix` into pack objects
 * (`_integrity/checkpoint-packs/<first record seq>-<last record seq>.json`, at most
 * `limits.packSizeMax` each), once at least `limits.looseMin` are loose: the sweep writes one object per
 * checkpoint (one a minute under steady ingest, ~525,000 a year), and an offline verify GETs
 * every one. Each pack is written before the loose objects it holds are deleted, and deleted
 * only while this node leads (`fence`), so at every moment each checkpoint is in the bucket at
 * least once; a run stopped between the two leaves copies a verifier reads once. Returns how
 * many loose objects were packed (and deleted).
 */
export async function packIntegrityCheckpoints(objects: ObjectStore, prefix: string, fence: Pick<CommitFence, 'mayCommit'>, limits: CheckpointPackLimits = CHECKPOINT_PACK_LIMITS): Promise<number> {
  const loose = (await listAll(objects, joinKey(prefix, `${INTEGRITY_DIR}/${CHECKPOINTS_FOLDER}/`)))
    .map((key) => ({ key, seq: seqOfLooseKey(key) }))
    .filter((object): object is { key: string; seq: number } => object.seq !== undefined)
    .slice(0, limits.perRunMax);
  if (loose.length < limits.looseMin) return 0;
  let packed = 0;
  for (let at = 0; at < loose.length; at += limits.packSizeMax) {
    const group = loose.slice(at, at + limits.packSizeMax);
    const texts = await readTexts(objects, group.map((object) => object.key));
    const pack: CheckpointPack = { format: CHECKPOINT_PACK_FORMAT, checkpoints: group.map((object, i) => ({ seq: object.seq, checkpoint: texts[i] as string })) };
    const first = group[0] as { seq: number };
    const last = group.at(-1) as { seq: number };
    if (!fence.mayCommit()) throw new AuditError(AuditErrorCode.NOT_LEADER, `no longer the leader; checkpoint packing beside ${prefix} stopped after packing ${packed} checkpoints (the next leader's maintenance run finishes it)`);
    await objects.put(joinKey(prefix, `${INTEGRITY_DIR}/${PACKS_FOLDER}/${encodeKeyNumber(first.seq)}-${encodeKeyNumber(last.seq)}.json`), JSON.stringify(pack), 'application/json');
    packed += await deleteWhileLeader(objects, group.map((object) => object.key), fence, `checkpoint packing beside ${prefix}`);
  }
  return packed;
}
