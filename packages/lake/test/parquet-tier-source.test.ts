// Goal: a Parquet location's live files are worked out again only when its log changed — a
// search page or a re-send lookup between two commits reuses them (from a year's checkpoint,
// ~340,000 files, each listing took ~240 ms of one turn) — and a new commit is always seen.
import type { StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { useEmbeddedS3 } from '../src/testing/index.js';
import { commitParquetBatch, ParquetTierSource } from '../src/index.js';

const BUCKET = 'live';
const T0 = Date.UTC(2026, 4, 1);
const CREDENTIALS = { accessKeyId: 'ALLIVEFILESTEST00001', secretAccessKey: 'live-files-test-secret-0123456789abcdef' };
const s3 = useEmbeddedS3('parquet-tier-source-', BUCKET, CREDENTIALS);

function stored(seq: number): StoredEvent {
  return { eventId: `e${seq}`, userId: 'u', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: `q${seq}`, details: '', timestamp: T0 + seq, ingestTs: T0 + seq, seq, term: 1 };
}

describe('ParquetTierSource', () => {
  it('lists the same live files while its log is unchanged, and a commit made since', async () => {
    const objects = s3.connections.bucket('s3', BUCKET);
    const location = { bucket: BUCKET, prefix: 'listed' };
    const commit = (seq: number) => commitParquetBatch(objects, location, [stored(seq)], { term: 1, nowMs: T0, afterSeq: seq - 1, mayCommit: () => true });
    await commit(1);
    await commit(2);
    const source = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${BUCKET}/listed`, connectionId: 's3' });
    const first = await source.listFiles();
    expect(first).toHaveLength(2);
    expect(await source.listFiles()).toBe(first);
    await commit(3);
    const after = await source.listFiles();
    expect(after).not.toBe(first);
    expect(after.map((file) => file.key)).toEqual(expect.arrayContaining(first.map((file) => file.key)));
    expect(after).toHaveLength(3);
    expect(await source.listFiles()).toBe(after);
  });
});
