import { hash } from 'node:crypto';
import { AuditError, AuditErrorCode, INTEGRITY_ACTIONS, isSelfRecord, type StoredEvent } from '@auditlake/model';
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
  /** Packed, then loose; each text once. */
  checkpoints: FoundIntegrityText[];
  keys: FoundIntegrityText[];
}

/** Hex digits of a pack's content digest in its name (64 bits: no two packs of a tier share a name). */
const PACK_DIGEST_HEX = 16;

/** A checkpoint pack's content: the checkpoint records' signed texts, by record seq. */
interface CheckpointPack {
  format: typeof CHECKPOINT_PACK_FORMAT;
  checkpoints: Array<{ seq: number; checkpoint: string }>;
}


/** The newest checkpoint record's signed text in `batch`, if it has one. */
export function latestCheckpointText(batch: readonly StoredEvent[]): string | undefined {
  for (let i = batch.length - 1; i >= 0; i--) {
    const event = batch[i] as StoredEvent;
    if (isSelfRecord(event, INTEGRITY_ACTIONS.checkpoint)) return event.details;
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
    if (isSelfRecord(event, INTEGRITY_ACTIONS.checkpoint)) folder = CHECKPOINTS_FOLDER;
    else if (isSelfRecord(event, INTEGRITY_ACTIONS.registerKey)) folder = KEYS_FOLDER;
    if (folder === undefined) continue;
    await objects.put(joinKey(prefix, `${INTEGRITY_DIR}/${folder}/${encodeKeyNumber(event.seq)}.json`), event.details, 'application/json');
    written++;
  }
  return written;
}

/** The objects' texts, a few GETs in flight at once; undefined for one gone since it was listed. */
async function readTexts(objects: ObjectStore, keys: readonly string[]): Promise<Array<string | undefined>> {
  const decoder = new TextDecoder();
  return mapBounded(keys, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (key) => {
    const bytes = await objects.find(key);
    return bytes === undefined ? undefined : decoder.decode(bytes);
  });
}

/** The record seq a loose checkpoint object directly in `folder` is named by (`<16 digits>.json`), or undefined. */
function seqOfLooseKey(key: string, folder: string): number | undefined {
  const name = key.startsWith(folder) ? key.slice(folder.length) : '';
  return /^\d{16}\.json$/.test(name) ? Number(name.slice(0, 16)) : undefined;
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
 * maintenance made of older ones ({@link packIntegrityCheckpoints}), and key objects; each text
 * once (a checkpoint both loose and packed, or in two packs, after a packing run that stopped
 * midway). The loose objects are listed and read before the packs are listed: a packing run
 * writes a pack before deleting the objects it holds, so one found gone has its pack listed,
 * and a verify while maintenance packs misses nothing.
 */
export async function readIntegrityObjects(objects: ObjectStore, prefix: string): Promise<IntegrityObjects> {
  const folder = (name: string) => joinKey(prefix, `${INTEGRITY_DIR}/${name}/`);
  const found: FoundIntegrityText[] = [];
  const looseKeys = await objects.list(folder(CHECKPOINTS_FOLDER));
  const looseTexts = await readTexts(objects, looseKeys);
  const packKeys = await objects.list(folder(PACKS_FOLDER));
  const packTexts = await readTexts(objects, packKeys);
  packKeys.forEach((key, i) => {
    const text = packTexts[i];
    const url = objects.url(key);
    if (text === undefined) throw new AuditError(AuditErrorCode.TABLE_INVALID, `the checkpoint pack ${url} was deleted while being read (packs are never deleted)`);
    for (const { seq, checkpoint } of parsePack(text, url).checkpoints) found.push({ text: checkpoint, where: `${url} (record seq ${seq})` });
  });
  looseKeys.forEach((key, i) => {
    const text = looseTexts[i];
    if (text !== undefined) found.push({ text, where: objects.url(key) });
  });
  const checkpoints: FoundIntegrityText[] = [];
  const seen = new Set<string>();
  for (const entry of found) {
    if (seen.has(entry.text)) continue;
    seen.add(entry.text);
    checkpoints.push(entry);
  }
  const keyKeys = await objects.list(folder(KEYS_FOLDER));
  const keyTexts = await readTexts(objects, keyKeys);
  const keys = keyKeys.flatMap((key, i) => (keyTexts[i] === undefined ? [] : [{ text: keyTexts[i], where: objects.url(key) }]));
  return { checkpoints, keys };
}

/**
 * Packs loose checkpoint objects beside the tier under `prefix` into pack objects
 * (`_integrity/checkpoint-packs/<first record seq>-<last record seq>-<digest>.json`, at most
 * `limits.packSizeMax` each), once at least `limits.looseMin` are loose: the sweep writes one
 * object per checkpoint (one a minute under steady ingest, ~525,000 a year), and an offline
 * verify GETs every one. Each pack is written before the loose objects it holds are deleted,
 * and those are deleted only while this node leads (`fence`), so at every moment each
 * checkpoint is in the bucket at least once. A pack's name ends with a digest of its content,
 * so no pack ever replaces another: a run that stopped midway (some deletes done, some not)
 * and the next one over what is left write different packs, and a checkpoint both hold is
 * read once. Returns how many loose objects were packed (and deleted).
 */
export async function packIntegrityCheckpoints(objects: ObjectStore, prefix: string, fence: Pick<CommitFence, 'mayCommit'>, limits: CheckpointPackLimits = CHECKPOINT_PACK_LIMITS): Promise<number> {
  const folder = joinKey(prefix, `${INTEGRITY_DIR}/${CHECKPOINTS_FOLDER}/`);
  const what = `checkpoint packing of s3://${objects.bucket}/${prefix}`;
  const loose = (await objects.list(folder, { max: limits.perRunMax }))
    .map((key) => ({ key, seq: seqOfLooseKey(key, folder) }))
    .filter((object): object is { key: string; seq: number } => object.seq !== undefined);
  if (loose.length < limits.looseMin) return 0;
  let packed = 0;
  for (let at = 0; at < loose.length; at += limits.packSizeMax) {
    const listed = loose.slice(at, at + limits.packSizeMax);
    const texts = await readTexts(objects, listed.map((object) => object.key));
    // One gone since the listing was packed and deleted by another run (a deposed leader's).
    const group = listed.flatMap((object, i) => (texts[i] === undefined ? [] : [{ ...object, text: texts[i] }]));
    if (group.length === 0) continue;
    const pack: CheckpointPack = { format: CHECKPOINT_PACK_FORMAT, checkpoints: group.map((object) => ({ seq: object.seq, checkpoint: object.text })) };
    const body = JSON.stringify(pack);
    const name = `${encodeKeyNumber((group[0] as { seq: number }).seq)}-${encodeKeyNumber((group.at(-1) as { seq: number }).seq)}-${hash('sha256', body, 'hex').slice(0, PACK_DIGEST_HEX)}.json`;
    if (!fence.mayCommit()) throw new AuditError(AuditErrorCode.NOT_LEADER, `no longer the leader; ${what} stopped after packing ${packed} checkpoints (the next leader's maintenance run finishes it)`);
    await objects.put(joinKey(prefix, `${INTEGRITY_DIR}/${PACKS_FOLDER}/${name}`), body, 'application/json');
    packed += await deleteWhileLeader(objects, group.map((object) => object.key), fence, what);
  }
  return packed;
}
