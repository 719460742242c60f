// Goal: the prefilter's worker threads give the same answers as the inline prefilter, exit when idle and on close (failing what is pending), and start again when needed.
import type { StoredEvent } from '@auditlake/model';
import { afterEach, describe, expect, it } from 'vitest';
import { AuditParquetFile } from '../src/audit-parquet-file.js';
import { bytesSource } from '../src/byte-source.js';
import { encodeAuditParquet } from '../src/parquet-writer.js';
import { TextProbePool } from '../src/text-probe-pool.js';

const TEXT_COLUMNS = ['query', 'details', 'resource', 'user_id', 'action', 'tables'] as const;
const T0 = Date.UTC(2026, 2, 1);
const pools: TextProbePool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

function pool(options?: ConstructorParameters<typeof TextProbePool>[0]): TextProbePool {
  const created = new TextProbePool(options);
  pools.push(created);
  return created;
}

function ev(i: number, over: Partial<StoredEvent> = {}): StoredEvent {
  return { eventId: `e${i}`, userId: `user${i % 3}`, source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: `SELECT ${i}`, details: '', timestamp: T0 + i, ingestTs: T0 + i, seq: i + 1, term: 0, ...over };
}

const events = Array.from({ length: 600 }, (_, i) => ev(i, i % 170 === 3 ? { query: `select * from MATCH_${i}` } : i === 420 ? { userId: 'Match-user' } : {}));
const file = await AuditParquetFile.open(bytesSource(encodeAuditParquet(events, { rowGroupSize: 50 })));

describe('TextProbePool', () => {
  it('answers every group as the inline prefilter does', async () => {
    const workers = pool({ threadsMax: 2 });
    for (const q of ['match', 'match_173', 'match-user', 'nothing-here']) {
      const inline = await Promise.all(file.rowGroups.map((g) => file.rowGroupMayContainText(g.index, q, TEXT_COLUMNS)));
      const pooled = await Promise.all(file.rowGroups.map((g) => file.rowGroupMayContainText(g.index, q, TEXT_COLUMNS, workers)));
      expect(pooled, q).toEqual(inline);
    }
    expect(workers.threads).toBe(2);
    expect((await Promise.all(file.rowGroups.map((g) => file.rowGroupMayContainText(g.index, 'match', TEXT_COLUMNS, workers)))).filter(Boolean).length).toBe(5);
  });

  it('lets idle workers exit, and starts one again for the next probe', async () => {
    const workers = pool({ threadsMax: 1, idleMs: 20 });
    expect(await file.rowGroupMayContainText(0, 'match', TEXT_COLUMNS, workers)).toBe(true);
    expect(workers.threads).toBe(1);
    await expect.poll(() => workers.threads).toBe(0);
    expect(await file.rowGroupMayContainText(1, 'match', TEXT_COLUMNS, workers)).toBe(false);
  });

  it('close() terminates the workers and fails probes still pending', async () => {
    const workers = pool({ threadsMax: 1 });
    // Probes queued on one worker: close() comes before most have been answered.
    const pending = Promise.allSettled(file.rowGroups.map((g) => file.rowGroupMayContainText(g.index, 'match', TEXT_COLUMNS, workers)));
    await expect.poll(() => workers.threads).toBe(1);
    await workers.close();
    expect(workers.threads).toBe(0);
    const outcomes = await pending;
    expect(outcomes.some((o) => o.status === 'rejected' && /closed/.test(String(o.reason)))).toBe(true);
    expect(() => new TextProbePool({ threadsMax: 0 })).toThrow(TypeError);
  });
});
