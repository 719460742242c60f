import { AuditError, AuditErrorCode } from '@auditlake/model';
import { encodeKeyNumber } from './key-number.js';
import type { ObjectStore } from './object-store.js';
import { dataFileFault, PARQUET_DAY, type CommittedFile } from './parquet-committer.js';
import { joinKey, type S3Location } from './s3-location.js';
import type { Watermark } from './watermark.js';

/** Checkpoints of the Parquet log live here, `<watermark seq, 16 digits>.json`, beside the markers. */
export const CHECKPOINTS_DIR = '_auditlake/checkpoints';

/**
 * A file a folded compaction replaced that may still be in the bucket: deletion (after the grace
 * period, or at once for an erasure) needs it and its compaction's time, which the folded
 * compaction marker is no longer read for.
 */
export interface ReplacedFile {
  key: string;
  /** The replacing compaction's `committedAtMs`. */
  committedAtMs: number;
  /** Replaced by an erasure's row rewrite. */
  erasure?: boolean;
}

/**
 * The Parquet log folded up to one point: what a reader holds after folding every commit marker
 * through the one whose watermark is `watermark` (the checkpoint's key), and, per day, every
 * compaction marker through generation `generations[day]` (applied or not). A reader starting
 * here folds only the commit markers after it and the compaction markers above those
 * generations, and gets the live files of a reader that folds everything from the start.
 */
export interface ParquetCheckpoint {
  format: 'auditlake-parquet-checkpoint/1';
  /** The watermark of the last commit marker folded; names the checkpoint. */
  watermark: Watermark;
  /** When and by which term it was written (informational: the content depends on the markers alone). */
  writtenAtMs: number;
  term: number;
  /** The live files, with what their commit or compaction marker records of them. */
  files: CommittedFile[];
  /** Per day, the last compaction generation folded (every generation up to it). */
  generations: Record<string, number>;
  /** Seqs of the erasure records the folded commit markers hold. */
  erasureSeqs: number[];
  /** Files the folded compactions replaced that were still in the bucket when it was written. */
  replaced: ReplacedFile[];
}

export function checkpointKey(location: S3Location, watermarkSeq: number): string {
  return joinKey(location.prefix, `${CHECKPOINTS_DIR}/${encodeKeyNumber(watermarkSeq)}.json`);
}

/** The watermark seq a checkpoint key names, or undefined for another key. */
export function checkpointKeySeq(location: S3Location, key: string): number | undefined {
  const name = key.slice(joinKey(location.prefix, `${CHECKPOINTS_DIR}/`).length);
  return /^\d{16}\.json$/.test(name) ? Number(name.slice(0, 16)) : undefined;
}

/** Checkpoint keys at `location`, oldest first. */
export async function listCheckpointKeys(objects: ObjectStore, location: S3Location): Promise<string[]> {
  return (await objects.list(joinKey(location.prefix, `${CHECKPOINTS_DIR}/`))).filter((key) => checkpointKeySeq(location, key) !== undefined);
}

export interface LoadedCheckpoint {
  key: string;
  checkpoint: ParquetCheckpoint;
}

/**
 * The newest checkpoint at `location` (one LIST and one GET), or undefined when there is none.
 * A checkpoint that is not one (bad JSON, a wrong shape, a watermark other than its key's) is
 * refused with `AUDIT_TABLE_INVALID` naming it: a reader never guesses around a damaged log.
 */
export async function readNewestCheckpoint(objects: ObjectStore, location: S3Location): Promise<LoadedCheckpoint | undefined> {
  const key = (await listCheckpointKeys(objects, location)).at(-1);
  if (key === undefined) return undefined;
  return { key, checkpoint: parseCheckpoint(objects, location, key, await objects.get(key)) };
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;
const isTime = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n);

function checkFile(file: unknown, location: S3Location): string | undefined {
  if (typeof file !== 'object' || file === null) return 'a file entry is not an object';
  const f = file as Record<string, unknown>;
  const foreign = dataFileFault(location, f);
  if (foreign !== undefined) return `it ${foreign}`;
  if (typeof f['eventDate'] !== 'string' || !isCount(f['rows']) || !isCount(f['bytes']) || !isTime(f['tsMin']) || !isTime(f['tsMax'])) return `file ${String(f['key'])} lacks its day, rows, bytes or event-time bounds`;
  return undefined;
}

/** Why `value` is not a checkpoint keyed by `seq`, or undefined when it is one. */
function checkpointFault(value: unknown, seq: number, location: S3Location): string | undefined {
  if (typeof value !== 'object' || value === null) return 'not a JSON object';
  const c = value as Record<string, unknown>;
  if (c['format'] !== 'auditlake-parquet-checkpoint/1') return `format is ${JSON.stringify(c['format'])}, not auditlake-parquet-checkpoint/1`;
  const watermark = c['watermark'] as Record<string, unknown> | undefined;
  if (typeof watermark !== 'object' || watermark === null || !isCount(watermark['seq']) || !isTime(watermark['ingestTs'])) return 'no watermark';
  if (watermark['seq'] !== seq) return `its watermark seq ${String(watermark['seq'])} is not its key's ${seq}`;
  if (!Array.isArray(c['files'])) return 'no file list';
  for (const file of c['files']) {
    const fault = checkFile(file, location);
    if (fault !== undefined) return fault;
  }
  const generations = c['generations'];
  if (typeof generations !== 'object' || generations === null || Array.isArray(generations)) return 'no generations';
  for (const [day, generation] of Object.entries(generations)) if (!PARQUET_DAY.test(day) || !isCount(generation)) return `generation of ${day} is not a day's count`;
  if (!Array.isArray(c['erasureSeqs']) || !c['erasureSeqs'].every(isCount)) return 'no erasure seqs';
  if (!Array.isArray(c['replaced']) || !c['replaced'].every((r: unknown) => typeof r === 'object' && r !== null && typeof (r as ReplacedFile).key === 'string' && isTime((r as ReplacedFile).committedAtMs))) {
    return 'no replaced-file list';
  }
  for (const replaced of c['replaced'] as ReplacedFile[]) {
    const foreign = dataFileFault(location, { key: replaced.key });
    if (foreign !== undefined) return `a replaced file ${foreign}`;
  }
  return undefined;
}

export function parseCheckpoint(objects: ObjectStore, location: S3Location, key: string, bytes: Uint8Array): ParquetCheckpoint {
  const seq = checkpointKeySeq(location, key);
  let value: unknown;
  let fault: string | undefined;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch (err) {
    fault = `not JSON (${(err as Error).message})`;
  }
  fault ??= seq === undefined ? 'not a checkpoint key' : checkpointFault(value, seq, location);
  if (fault !== undefined) {
    throw new AuditError(
      AuditErrorCode.TABLE_INVALID,
      `${objects.url(key)} is not a valid Parquet log checkpoint: ${fault}. Readers refuse the location until it is deleted (they then start from the checkpoint before it, or fold every marker); \`auditlake verify\` checks a checkpoint against the markers it folds`,
    );
  }
  return value as ParquetCheckpoint;
}
