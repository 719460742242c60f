import { deleteWhileLeader } from './fenced-delete.js';
import { joinKey } from './s3-location.js';
import { CHECKPOINTS_DIR, checkpointKeySeq } from './parquet-checkpoint.js';
import type { ParquetCompactionContext } from './parquet-compaction.js';
import { orphanCutoffMs } from './store-clock.js';

/**
 * Log checkpoints always kept: the newest, which readers start from, and the one before it, for
 * a reader to start from should the newest be damaged and deleted by an operator.
 */
export const LOG_CHECKPOINTS_KEPT = 2;

/**
 * Deletes the log checkpoints of a Parquet location superseded long enough ago: all but the
 * newest LOG_CHECKPOINTS_KEPT, each only once the checkpoint after it has existed for
 * `minAgeMs` (the orphan age). A reader lists the checkpoints and fetches the newest: one that
 * took a checkpoint as the newest listed it before its successor existed, so after that age no
 * reader is still about to fetch it. Each checkpoint holds every live file, so kept for good
 * they added up to the live files times the checkpoints ever written — growing with the square
 * of the location's age (about 2 TB in a year at 1,000 events/s with compaction behind).
 */
export async function deleteSupersededLogCheckpoints(context: Pick<ParquetCompactionContext, 'objects' | 'location' | 'fence' | 'now' | 'storeNow'>, minAgeMs: number): Promise<number> {
  const { objects, location } = context;
  const cutoffMs = await orphanCutoffMs(context.now(), minAgeMs, context.storeNow);
  const listed = (await objects.listObjects(joinKey(location.prefix, `${CHECKPOINTS_DIR}/`)))
    .filter((object) => checkpointKeySeq(location, object.key) !== undefined)
    .sort((a, b) => (a.key < b.key ? -1 : 1));
  const superseded: string[] = [];
  for (let i = 0; i + LOG_CHECKPOINTS_KEPT < listed.length; i++) {
    const successor = listed[i + 1] as { lastModifiedMs: number };
    // A listing without LastModified (0) tells no age: nothing is deleted on its account.
    if (successor.lastModifiedMs > 0 && successor.lastModifiedMs <= cutoffMs) superseded.push((listed[i] as { key: string }).key);
  }
  return deleteWhileLeader(objects, superseded, context.fence, `superseded log checkpoints of s3://${location.bucket}/${location.prefix}`);
}
