// Goal: tier files encoded in a worker thread are exactly what the inline encoder writes (data-file records too); a rewrite keeps every row and refuses an input holding other than its expected rows with a coded error; a worker that dies fails its job with AUDIT_ENCODER_FAILED instead of hanging, and the next job starts a new worker; close() fails pending jobs, stops every thread and refuses later jobs. With two threads each file is encoded on both (one file split by columns) and comes out byte for byte the same; a crash of either worker fails the job with AUDIT_ENCODER_FAILED and the next job succeeds.
import { AuditParquetFile, bytesSource, icebergParquetKvMetadata } from '@auditlake/format';
import { AuditErrorCode, type StoredEvent } from '@auditlake/model';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getPriority } from 'node:os';
import { Worker, type TransferListItem } from 'node:worker_threads';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { ENCODE_MESSAGE_EVENTS_MAX, encodeTierFile, rewriteTierFiles, TierEncodePool, type RewriteInput } from '../src/index.js';

const T0 = Date.UTC(2026, 4, 1);
const ICEBERG = { kvMetadata: icebergParquetKvMetadata(), icebergDataFile: true };
const PARQUET = { kvMetadata: { 'auditlake.firstSeq': '1' }, icebergDataFile: false };

/** Events firstSeq.. of one day, as the store reads them back (plain JSON objects). */
function events(firstSeq: number, count: number): StoredEvent[] {
  const list = Array.from({ length: count }, (_, i) => {
    const seq = firstSeq + i;
    return { eventId: `e${seq}`, userId: `u${seq % 7}`, source: 'trino', action: 'data:Select', resource: `r${seq % 11}`, decision: seq % 3 === 0 ? 'DENY' : 'ALLOW', tables: [`t${seq % 5}`], query: `select ${seq}`, details: '', timestamp: T0 + seq, ingestTs: T0 + 1_000 + seq, seq, term: 1 };
  });
  return JSON.parse(JSON.stringify(list)) as StoredEvent[];
}

function pool(options: ConstructorParameters<typeof TierEncodePool>[0] = {}): TierEncodePool {
  const p = new TierEncodePool(options);
  onTestFinished(() => p.close());
  return p;
}

async function ids(bytes: Uint8Array): Promise<string[]> {
  return (await (await AuditParquetFile.open(bytesSource(bytes))).read({})).map((e) => e.eventId);
}

describe('TierEncodePool', () => {
  it('encodes in a worker exactly the bytes and data-file record the inline encoder makes', async () => {
    const p = pool();
    const batch = events(1, 2_000);
    const [inWorker, inline] = [await p.encode(batch, ICEBERG), await encodeTierFile(batch, ICEBERG)];
    expect(p.threads).toBe(1);
    expect(Buffer.from(inWorker.bytes).equals(Buffer.from(inline.bytes))).toBe(true);
    expect(inWorker.dataFile).toEqual(inline.dataFile);
    expect({ rows: inWorker.rows, tsMin: inWorker.tsMin, tsMax: inWorker.tsMax }).toEqual({ rows: 2_000, tsMin: T0 + 1, tsMax: T0 + 2_000 });
    const parquet = await p.encode(batch, PARQUET);
    expect(parquet.dataFile).toBeUndefined();
    expect(await ids(parquet.bytes)).toEqual(batch.map((e) => e.eventId));
  });

  it('rewrites files in a worker keeping every row in order, and refuses an input holding other than its expected rows, naming it', async () => {
    const p = pool();
    // Fresh inputs for each call: a rewrite takes its inputs' bytes.
    const inputsNow = () => Promise.all([events(1, 300), events(301, 500), events(801, 200)].map(async (batch, i) => ({ bytes: (await encodeTierFile(batch, ICEBERG)).bytes, name: `in-${i}.parquet`, expectedRows: batch.length })));
    const inputs = await inputsNow();
    const files = await p.rewrite(await inputsNow(), 400, ICEBERG);
    expect(files.map((f) => f.rows)).toEqual([400, 400, 200]);
    expect((await Promise.all(files.map((f) => ids(f.bytes)))).flat()).toEqual(events(1, 1_000).map((e) => e.eventId));
    expect(files.every((f) => f.dataFile?.record_count === f.rows)).toBe(true);
    // The same as inline.
    expect((await rewriteTierFiles(inputs, 400, ICEBERG)).map((f) => f.dataFile)).toEqual(files.map((f) => f.dataFile));
    const fresh = await inputsNow();
    const wrong = [fresh[0]!, { ...fresh[1]!, expectedRows: 499 }];
    await expect(p.rewrite(wrong, 400, ICEBERG)).rejects.toMatchObject({ code: AuditErrorCode.TABLE_INVALID, message: expect.stringContaining('in-1.parquet holds 500 rows') });
  });

  it('moves a rewrite\'s input bytes to the worker instead of copying them (the caller\'s views are empty after); a view into a larger buffer is copied and left intact', async () => {
    const p = pool();
    const owned: RewriteInput = { bytes: (await encodeTierFile(events(1, 300), ICEBERG)).bytes.slice(), name: 'owned.parquet', expectedRows: 300 };
    const second = (await encodeTierFile(events(301, 200), ICEBERG)).bytes;
    const larger = new Uint8Array(second.byteLength + 16);
    larger.set(second, 8);
    const view: RewriteInput = { bytes: larger.subarray(8, 8 + second.byteLength), name: 'view.parquet', expectedRows: 200 };
    const files = await p.rewrite([owned, view], 1_000, ICEBERG);
    expect((await Promise.all(files.map((f) => ids(f.bytes)))).flat()).toEqual(events(1, 500).map((e) => e.eventId));
    expect(owned.bytes.byteLength).toBe(0);
    expect(Buffer.from(view.bytes).equals(Buffer.from(second))).toBe(true);
  });

  it('hands a large encode job to the worker in messages of ENCODE_MESSAGE_EVENTS_MAX events, the first at once and each later one after a turn of the event loop, and encodes exactly what the inline encoder does', async () => {
    const p = pool();
    await p.encode(events(1, 10), ICEBERG);
    const posted = vi.spyOn(Worker.prototype, 'postMessage');
    onTestFinished(() => posted.mockRestore());
    const batch = events(1, ENCODE_MESSAGE_EVENTS_MAX * 2 + 7);
    const file = p.encode(batch, ICEBERG);
    // Before any turn of the loop, only the first part was copied to the worker.
    expect(posted).toHaveBeenCalledTimes(1);
    const inWorker = await file;
    const sizes = posted.mock.calls.map(([message]) => (message as { events: unknown[] }).events.length);
    expect(sizes).toEqual([ENCODE_MESSAGE_EVENTS_MAX, ENCODE_MESSAGE_EVENTS_MAX, 7]);
    const inline = await encodeTierFile(batch, ICEBERG);
    expect(Buffer.from(inWorker.bytes).equals(Buffer.from(inline.bytes))).toBe(true);
    expect(inWorker.dataFile).toEqual(inline.dataFile);
  });

  it('runs its workers\' threads as much nicer as asked, and no other thread of the process', async () => {
    // The nice value (field 19) of each thread of this process, from /proc (Linux). A thread
    // that exits between the listing and the read (a closed pool's worker, a libuv helper) is
    // no longer a thread of the process, so it is left out rather than failing the read.
    const niceOfThreads = () =>
      readdirSync('/proc/self/task').flatMap((tid) => {
        let stat: string;
        try {
          stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ESRCH') return [];
          throw error;
        }
        return [Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])];
      });
    const base = getPriority();
    expect(niceOfThreads().every((nice) => nice === base)).toBe(true);
    const p = pool({ niceness: 7 });
    await p.encode(events(1, 10), ICEBERG);
    expect(niceOfThreads().filter((nice) => nice !== base)).toEqual([Math.min(19, base + 7)]);
    expect(() => new TierEncodePool({ niceness: 20 })).toThrow(TypeError);
  });

  it('a worker that dies fails its pending job with AUDIT_ENCODER_FAILED, and the next job starts a new worker', async () => {
    const p = pool();
    await p.encode(events(1, 10), ICEBERG);
    // A job large enough to still be running when the worker is terminated.
    const pending = p.encode(events(1, 50_000), ICEBERG);
    const failed = expect(pending).rejects;
    await p.crashWorkerForTest(0);
    await failed.toMatchObject({ code: AuditErrorCode.ENCODER_FAILED, message: expect.stringContaining('exited') });
    expect(p.threads).toBe(0);
    const after = await p.encode(events(1, 100), ICEBERG);
    expect(after.rows).toBe(100);
    expect(p.threads).toBe(1);
  }, 60_000);

  it('close() fails pending jobs, stops every thread and refuses later jobs; a second close is harmless', async () => {
    const p = pool({ threadsMax: 2 });
    const first = p.encode(events(1, 50_000), ICEBERG);
    const second = p.encode(events(1, 50_000), ICEBERG);
    expect(p.threads).toBe(2);
    const failed = Promise.allSettled([first, second]);
    await p.close();
    for (const outcome of await failed) expect(outcome).toMatchObject({ status: 'rejected', reason: { code: AuditErrorCode.ENCODER_FAILED } });
    expect(p.threads).toBe(0);
    await expect(p.encode(events(1, 10), ICEBERG)).rejects.toMatchObject({ code: AuditErrorCode.ENCODER_FAILED, message: expect.stringContaining('closed') });
    await p.close();
  }, 60_000);

  it('holds its process while a job is pending and never once its jobs are done, one thread or two (a second review: unref\'d, a caller awaiting only an encode exited before the answer)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tier-encode-pool-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'encode-once.mjs');
    writeFileSync(
      file,
      `import { TierEncodePool } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
      const events = Array.from({ length: 20000 }, (_, i) => ({ eventId: 'e' + i, userId: 'u', source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: 'q' + i, details: '', timestamp: ${T0} + i, ingestTs: ${T0} + i, seq: i + 1, term: 1 }));
      const file = await new TierEncodePool({ threadsMax: Number(process.argv[2]) }).encode(events, ${JSON.stringify(PARQUET)});
      console.log('encoded ' + file.rows);
      setTimeout(() => { console.log('still running'); process.exit(5); }, 15_000).unref();`,
    );
    for (const threads of ['1', '2']) {
      const run = spawnSync(process.execPath, [file, threads], { encoding: 'utf8', timeout: 60_000 });
      expect(run.stderr, threads).toBe('');
      expect(run.stdout.trim(), threads).toBe('encoded 20000');
      expect(run.status, threads).toBe(0);
    }
  });

  it('with two threads, encodes each file on both workers: exactly the inline bytes and data-file record, several row groups and non-ASCII text included, several files at once', async () => {
    const p = pool({ threadsMax: 2 });
    const text = (seq: number) => ['监查 ログ', 'émoji 😀🔒 \u{1F600}', 'مرحبا', "it's", ''][seq % 5] ?? '';
    const batch = events(1, 12_345).map((e) => ({ ...e, query: `select '${text(e.seq)}' ${e.seq}`, details: text(e.seq + 1) }));
    const inWorkers = await p.encode(batch, ICEBERG);
    expect(p.threads).toBe(2);
    const inline = await encodeTierFile(batch, ICEBERG);
    expect(inline.dataFile?.split_offsets).toHaveLength(2); // two row groups
    expect(Buffer.from(inWorkers.bytes).equals(Buffer.from(inline.bytes))).toBe(true);
    expect(inWorkers.dataFile).toEqual(inline.dataFile);
    const several = [events(1, 3_000), events(5_000, 1), events(9_000, 777)];
    const files = await Promise.all(several.map((b) => p.encode(b, PARQUET)));
    for (const [i, b] of several.entries()) expect(Buffer.from(files[i]!.bytes).equals(Buffer.from((await encodeTierFile(b, PARQUET)).bytes))).toBe(true);
    expect(p.threads).toBe(2);
  }, 60_000);

  it('with two threads, an event the columns cannot hold fails its job with the encoder\'s message, wherever its part came (rows are built part by part), and the next job succeeds', async () => {
    const p = pool({ threadsMax: 2 });
    for (const at of [3, ENCODE_MESSAGE_EVENTS_MAX * 2 + 3]) {
      const batch = events(1, ENCODE_MESSAGE_EVENTS_MAX * 2 + 7);
      batch[at] = { ...batch[at]!, decision: 'MAYBE' as never };
      await expect(p.encode(batch, ICEBERG)).rejects.toThrow(/decision must be ALLOW, DENY or ''/);
    }
    const batch = events(1, ENCODE_MESSAGE_EVENTS_MAX * 2 + 7);
    expect(Buffer.from((await p.encode(batch, ICEBERG)).bytes).equals(Buffer.from((await encodeTierFile(batch, ICEBERG)).bytes))).toBe(true);
  }, 60_000);

  it('with two threads, a crash of the worker encoding the other half of a file fails the job with AUDIT_ENCODER_FAILED; the next job succeeds', async () => {
    const p = pool({ threadsMax: 2 });
    const post = Object.getOwnPropertyDescriptor(Worker.prototype, 'postMessage')?.value as (this: Worker, message: unknown, transfer?: readonly TransferListItem[]) => void;
    // The worker given a file's other columns dies as soon as it has them.
    const crashing = vi.spyOn(Worker.prototype, 'postMessage').mockImplementation(function (this: Worker, message: unknown, transfer?: readonly TransferListItem[]) {
      post.call(this, message, transfer);
      if ((message as { job?: string }).job === 'encode-columns') void this.terminate();
    });
    onTestFinished(() => crashing.mockRestore());
    await expect(p.encode(events(1, 20_000), ICEBERG)).rejects.toMatchObject({ code: AuditErrorCode.ENCODER_FAILED, message: expect.stringContaining('exited') });
    crashing.mockRestore();
    const batch = events(1, 2_000);
    const after = await p.encode(batch, ICEBERG);
    expect(Buffer.from(after.bytes).equals(Buffer.from((await encodeTierFile(batch, ICEBERG)).bytes))).toBe(true);
  }, 60_000);

  it('with two threads, a crash of the worker that assembles a file fails the job with AUDIT_ENCODER_FAILED; the next job succeeds', async () => {
    const p = pool({ threadsMax: 2 });
    await p.encode(events(1, 10), ICEBERG);
    const pending = p.encode(events(1, 50_000), ICEBERG);
    const failed = expect(pending).rejects;
    await p.crashWorkerForTest(0);
    await failed.toMatchObject({ code: AuditErrorCode.ENCODER_FAILED, message: expect.stringContaining('exited') });
    expect((await p.encode(events(1, 100), ICEBERG)).rows).toBe(100);
  }, 60_000);

  it('an idle worker exits after idleMs; the next job starts another', async () => {
    const p = pool({ idleMs: 50 });
    await p.encode(events(1, 10), ICEBERG);
    await expect.poll(() => p.threads, { timeout: 10_000 }).toBe(0);
    expect((await p.encode(events(1, 10), ICEBERG)).rows).toBe(10);
  });
});
