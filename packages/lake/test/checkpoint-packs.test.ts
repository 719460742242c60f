// Goal: the `_integrity/` checkpoint objects the sweep writes one per checkpoint (~525,000 a year
// at one a minute) are packed by maintenance into a few objects without a checkpoint ever being
// absent from the bucket: below the minimum nothing moves; a run packs at most its limit, in
// packs of at most their size, each written before its loose objects are deleted; a leader
// deposed before the pack or between pack and deletes stops, and a run stopped with only some
// deletes done is followed by one whose pack never replaces the first (no checkpoint lost);
// only objects named as the sweep names them are packed; a reader gives every checkpoint once,
// loose or packed, also while a packing run moves them, names a damaged pack, and reads a long
// folder past one listing page.
import { AuditErrorCode, type StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { useEmbeddedS3 } from '../src/testing/index.js';
import {
  CHECKPOINT_PACK_FORMAT,
  commitIcebergBatch,
  commitParquetBatch,
  encodeKeyNumber,
  ensureIcebergTable,
  mapBounded,
  packIntegrityCheckpoints,
  readIntegrityObjects,
  resolveIcebergTable,
  runIcebergMaintenance,
  runParquetMaintenance,
  type CheckpointPackLimits,
  type ObjectStore,
} from '../src/index.js';

const BUCKET = 'packs';
const CREDENTIALS = { accessKeyId: 'ALCHECKPOINTPACKS001', secretAccessKey: 'checkpoint-packs-secret-0123456789abcd' };
const s3 = useEmbeddedS3('checkpoint-packs-', BUCKET, CREDENTIALS);

const LIMITS: CheckpointPackLimits = { looseMin: 10, packSizeMax: 10, perRunMax: 20 };
const leader = { mayCommit: () => true };

let prefixes = 0;
/** A fresh tier prefix with loose checkpoint objects at `seqs` (text `checkpoint <seq>`) and one key object. */
async function tierWith(seqs: readonly number[]): Promise<{ objects: ObjectStore; prefix: string }> {
  const objects = s3.connections.bucket('s3', BUCKET);
  const prefix = `tier-${++prefixes}`;
  await putLoose(objects, prefix, seqs);
  await objects.put(`${prefix}/_integrity/keys/${encodeKeyNumber(1)}.json`, 'key 1', 'application/json');
  return { objects, prefix };
}

async function putLoose(objects: ObjectStore, prefix: string, seqs: readonly number[]): Promise<void> {
  await mapBounded(seqs, 16, (seq) => objects.put(`${prefix}/_integrity/checkpoints/${encodeKeyNumber(seq)}.json`, `checkpoint ${seq}`, 'application/json'));
}

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);
/** A pack's key as packIntegrityCheckpoints names it: first and last record seq, then a digest of its content. */
const packKey = (prefix: string, first: number, last: number) => new RegExp(`^${prefix}/_integrity/checkpoint-packs/${encodeKeyNumber(first)}-${encodeKeyNumber(last)}-[0-9a-f]{16}\\.json$`);
const texts = (found: Array<{ text: string }>) => found.map((f) => f.text).sort();
const checkpointTexts = (seqs: readonly number[]) => seqs.map((seq) => `checkpoint ${seq}`).sort();

describe('packing checkpoint objects', () => {
  it('leaves fewer than the minimum loose, and reads them as they are', async () => {
    const { objects, prefix } = await tierWith(range(2, 9));
    expect(await packIntegrityCheckpoints(objects, prefix, leader, LIMITS)).toBe(0);
    expect(await objects.list(`${prefix}/_integrity/checkpoint-packs/`)).toEqual([]);
    const read = await readIntegrityObjects(objects, prefix);
    expect(texts(read.checkpoints)).toEqual(checkpointTexts(range(2, 9)));
    expect(read.checkpoints.map((c) => c.where)).toContain(`${objects.url(`${prefix}/_integrity/checkpoints/${encodeKeyNumber(2)}.json`)}`);
    expect(read.keys).toEqual([{ text: 'key 1', where: objects.url(`${prefix}/_integrity/keys/${encodeKeyNumber(1)}.json`) }]);
  });

  it('packs the oldest, at most a run\'s limit in packs of at most their size, and deletes what it packed', async () => {
    const seqs = range(1, 25).map((n) => n * 3);
    const { objects, prefix } = await tierWith(seqs);
    expect(await packIntegrityCheckpoints(objects, prefix, leader, LIMITS)).toBe(20);
    const packs = await objects.list(`${prefix}/_integrity/checkpoint-packs/`);
    expect(packs).toHaveLength(2);
    expect(packs[0]).toMatch(packKey(prefix, 3, 30));
    expect(packs[1]).toMatch(packKey(prefix, 33, 60));
    const first = JSON.parse(new TextDecoder().decode(await objects.get(packs[0] as string))) as { format: string; checkpoints: Array<{ seq: number; checkpoint: string }> };
    expect(first.format).toBe(CHECKPOINT_PACK_FORMAT);
    expect(first.checkpoints).toEqual(seqs.slice(0, 10).map((seq) => ({ seq, checkpoint: `checkpoint ${seq}` })));
    expect(await objects.list(`${prefix}/_integrity/checkpoints/`)).toEqual(seqs.slice(20).map((seq) => `${prefix}/_integrity/checkpoints/${encodeKeyNumber(seq)}.json`));

    const read = await readIntegrityObjects(objects, prefix);
    expect(texts(read.checkpoints)).toEqual(checkpointTexts(seqs));
    expect(read.checkpoints.find((c) => c.text === 'checkpoint 33')?.where).toBe(`${objects.url(packs[1] as string)} (record seq 33)`);
    // Five loose left: below the minimum, the next run leaves them.
    expect(await packIntegrityCheckpoints(objects, prefix, leader, LIMITS)).toBe(0);
  });

  it('a leader deposed before writing a pack writes and deletes nothing', async () => {
    const { objects, prefix } = await tierWith(range(1, 12));
    const failed = await packIntegrityCheckpoints(objects, prefix, { mayCommit: () => false }, LIMITS).catch((err: unknown) => err);
    expect(failed).toMatchObject({ code: AuditErrorCode.NOT_LEADER });
    expect((failed as Error).message).toBe(`no longer the leader; checkpoint packing of s3://${BUCKET}/${prefix} stopped after packing 0 checkpoints (the next leader's maintenance run finishes it)`);
    expect(await objects.list(`${prefix}/_integrity/checkpoint-packs/`)).toEqual([]);
    expect(await objects.list(`${prefix}/_integrity/checkpoints/`)).toHaveLength(12);
  });

  it('a leader deposed between a pack and its deletes leaves every checkpoint readable, and the next run finishes', async () => {
    const { objects, prefix } = await tierWith(range(1, 10));
    let asked = 0;
    // Leads when the pack is written (first question), not when the deletes are sent.
    const failed = await packIntegrityCheckpoints(objects, prefix, { mayCommit: () => ++asked === 1 }, LIMITS).catch((err: unknown) => err);
    expect(failed).toMatchObject({ code: AuditErrorCode.NOT_LEADER });
    expect(await objects.list(`${prefix}/_integrity/checkpoint-packs/`)).toHaveLength(1);
    expect(await objects.list(`${prefix}/_integrity/checkpoints/`)).toHaveLength(10);
    // Loose and packed, each checkpoint is read once.
    expect(texts((await readIntegrityObjects(objects, prefix)).checkpoints)).toEqual(checkpointTexts(range(1, 10)));

    // The same content again: the same pack (its name is its content's), then the deletes.
    expect(await packIntegrityCheckpoints(objects, prefix, leader, LIMITS)).toBe(10);
    expect(await objects.list(`${prefix}/_integrity/checkpoint-packs/`)).toHaveLength(1);
    expect(await objects.list(`${prefix}/_integrity/checkpoints/`)).toEqual([]);
    expect(texts((await readIntegrityObjects(objects, prefix)).checkpoints)).toEqual(checkpointTexts(range(1, 10)));
  });

  it('a run stopped with only some deletes done, then a run over what is left: the second pack replaces nothing, no checkpoint is lost', async () => {
    const seqs = range(1, 12);
    const { objects, prefix } = await tierWith(seqs);
    const folder = `${prefix}/_integrity/checkpoints/`;
    // Pack written, then the node lost its lease: no delete went out.
    let asked = 0;
    await expect(packIntegrityCheckpoints(objects, prefix, { mayCommit: () => ++asked === 1 }, { ...LIMITS, packSizeMax: 20 })).rejects.toMatchObject({ code: AuditErrorCode.NOT_LEADER });
    // Of its deletes (eight in flight), those of seqs 2..8 had gone through, seq 1's had not.
    for (const seq of range(2, 7)) await objects.delete(`${folder}${encodeKeyNumber(seq)}.json`);
    // The next run lists seqs 1 and 9..12: the same first and last seq, other content.
    expect(await packIntegrityCheckpoints(objects, prefix, leader, { ...LIMITS, looseMin: 5, packSizeMax: 20 })).toBe(5);
    const packs = await objects.list(`${prefix}/_integrity/checkpoint-packs/`);
    expect(packs).toHaveLength(2);
    for (const key of packs) expect(key).toMatch(packKey(prefix, 1, 12));
    expect(await objects.list(folder)).toEqual([]);
    expect(texts((await readIntegrityObjects(objects, prefix)).checkpoints)).toEqual(checkpointTexts(seqs));
  });

  it('packs only objects named as the sweep names them (16 digits, directly in the folder)', async () => {
    const { objects, prefix } = await tierWith(range(1, 10));
    const others = [`${prefix}/_integrity/checkpoints/old/${encodeKeyNumber(5)}.json`, `${prefix}/_integrity/checkpoints/0${encodeKeyNumber(11)}.json`, `${prefix}/_integrity/checkpoints/${encodeKeyNumber(12)}.txt`];
    for (const key of others) await objects.put(key, `other ${key}`, 'application/json');
    expect(await packIntegrityCheckpoints(objects, prefix, leader, LIMITS)).toBe(10);
    expect((await objects.list(`${prefix}/_integrity/checkpoints/`)).sort()).toEqual([...others].sort());
    // A verifier still reads them (and judges them).
    expect(texts((await readIntegrityObjects(objects, prefix)).checkpoints)).toEqual([...checkpointTexts(range(1, 10)), ...others.map((key) => `other ${key}`)].sort());
  });

  it('a reader while a packing run moves the checkpoints misses none', async () => {
    const seqs = range(1, 10);
    const { objects, prefix } = await tierWith(seqs);
    // The real store; the first loose checkpoint asked for is packed away (pack written, loose
    // objects deleted) just before the GET reaches the store.
    let packedMeanwhile = false;
    const racing = new Proxy(objects, {
      get(target, property, receiver) {
        if (property === 'find')
          return async (key: string) => {
            if (!packedMeanwhile && key.includes('/_integrity/checkpoints/')) {
              packedMeanwhile = true;
              expect(await packIntegrityCheckpoints(target, prefix, leader, LIMITS)).toBe(10);
            }
            return target.find(key);
          };
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    expect(texts((await readIntegrityObjects(racing, prefix)).checkpoints)).toEqual(checkpointTexts(seqs));
    expect(packedMeanwhile).toBe(true);
  });

  it('a damaged pack is refused, naming it', async () => {
    const { objects, prefix } = await tierWith(range(1, 10));
    await packIntegrityCheckpoints(objects, prefix, leader, LIMITS);
    const [pack] = await objects.list(`${prefix}/_integrity/checkpoint-packs/`);
    const url = objects.url(pack);
    for (const [body, why] of [
      ['{"format":"auditlake-checkpoint-pack/1","checkpoints":[{"seq":1,"checkpoint":"c"}', 'is damaged: '],
      ['{"format":"other","checkpoints":[]}', `is damaged: not a ${CHECKPOINT_PACK_FORMAT} object`],
      ['{"format":"auditlake-checkpoint-pack/1"}', 'is damaged: no checkpoints array'],
      ['{"format":"auditlake-checkpoint-pack/1","checkpoints":[{"seq":0,"checkpoint":"c"}]}', 'is damaged: entry {"seq":0,"checkpoint":"c"} is not {seq, checkpoint}'],
      ['{"format":"auditlake-checkpoint-pack/1","checkpoints":[{"seq":1,"checkpoint":7}]}', 'is damaged: entry {"seq":1,"checkpoint":7} is not {seq, checkpoint}'],
    ] as const) {
      await objects.put(pack as string, body, 'application/json');
      const failed = await readIntegrityObjects(objects, prefix).catch((err: unknown) => err);
      expect(failed, body).toMatchObject({ code: AuditErrorCode.TABLE_INVALID });
      expect((failed as Error).message, body).toContain(`the checkpoint pack ${url} ${why}`);
    }
  });

  it('reads a folder of more loose checkpoints than one listing page holds', async () => {
    const seqs = range(1, 1_100);
    const { objects, prefix } = await tierWith(seqs);
    expect(texts((await readIntegrityObjects(objects, prefix)).checkpoints)).toEqual(checkpointTexts(seqs));
    // With the default limits (a pack from 1,000 loose on), one run packs them all.
    expect(await packIntegrityCheckpoints(objects, prefix, leader)).toBe(1_100);
    const packs = await objects.list(`${prefix}/_integrity/checkpoint-packs/`);
    expect(packs).toHaveLength(1);
    expect(packs[0]).toMatch(packKey(prefix, 1, 1_100));
    expect(texts((await readIntegrityObjects(objects, prefix)).checkpoints)).toEqual(checkpointTexts(seqs));
  }, 60_000);
});

describe('a maintenance run', () => {
  const T0 = Date.UTC(2026, 4, 1);
  const events = (count: number): StoredEvent[] =>
    Array.from({ length: count }, (_, i) => ({ eventId: `e${i + 1}`, userId: 'u', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: `q${i}`, details: '', timestamp: T0 + i, ingestTs: T0 + i, seq: i + 1, term: 1 }));
  const fence = { term: 1, mayCommit: () => true };
  const policy = { snapshotRetainLast: 24, removeOrphanFiles: true, orphanMinAgeMs: 3_600_000, targetFileSizeBytes: 16 * 1024 * 1024, metadataPreviousVersionsMax: 100 };
  const seqs = range(1, 1_000);

  it('packs the checkpoints beside its Iceberg table, and beside its Parquet location', async () => {
    const objects = s3.connections.bucket('s3', BUCKET);
    const table = resolveIcebergTable('cat.ops.events', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
    const loaded = await ensureIcebergTable(objects, table, T0);
    await commitIcebergBatch(objects, table, loaded, events(10), { ...fence, nowMs: Date.now(), writerId: 'test', afterSeq: 0 });
    await putLoose(objects, table.s3.prefix, seqs);
    const iceberg = await runIcebergMaintenance({ objects, table, fence, now: () => Date.now() }, policy);
    expect(iceberg.checkpointsPacked).toBe(1_000);
    expect(await objects.list(`${table.s3.prefix}/_integrity/checkpoints/`)).toEqual([]);
    expect(texts((await readIntegrityObjects(objects, table.s3.prefix)).checkpoints)).toEqual(checkpointTexts(seqs));

    const location = { bucket: BUCKET, prefix: 'pq' };
    await commitParquetBatch(objects, location, events(10), { term: 1, nowMs: Date.now(), afterSeq: 0, mayCommit: () => true });
    await putLoose(objects, location.prefix, seqs);
    const parquet = await runParquetMaintenance({ objects, location, fence, now: () => Date.now() }, policy);
    expect(parquet.checkpointsPacked).toBe(1_000);
    expect(await objects.list(`${location.prefix}/_integrity/checkpoints/`)).toEqual([]);
    expect(texts((await readIntegrityObjects(objects, location.prefix)).checkpoints)).toEqual(checkpointTexts(seqs));
    // The table's checkpoints were not taken for the location's, nor the other way round.
    expect(await objects.list(`${table.s3.prefix}/_integrity/checkpoint-packs/`)).toHaveLength(1);
    expect(await objects.list(`${location.prefix}/_integrity/checkpoint-packs/`)).toHaveLength(1);
  }, 120_000);
});
