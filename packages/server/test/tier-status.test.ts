// Goal: tierStatus, answered from memory, stays exact — at every sweep of a long backlog the backlog is the number of stored events after the watermark (counted here by reading them), and the watermark is the one the sweep replicated, also once local cleanup leaves holes below it. And it says when retention counts the log as tiered only part of the way to the watermark, because a later term ordered entries under it.
import { WATERMARK_META, WATERMARK_TERM_META, type Watermark } from '@auditlake/lake';
import { validateEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { FAST_TIERING, externalS3, postSettings, tierStatus } from './tier-helpers.js';
import { event, startTestNode, type TestNode } from './test-node.js';

const PARQUET = { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://ext/audit', 'audit.tier.connectionId': 'ext' };

/** The truth: stored events after `seq`, read one by one. */
async function storedAfter(t: TestNode, seq: number): Promise<number> {
  return (await t.node.store.readBySeq(seq, 1_000_000)).length;
}

describe('tierStatus', () => {
  it('backlog and watermark are exact after every sweep, with holes left below the watermark by local cleanup', async () => {
    const s3 = await externalS3();
    const t = await startTestNode({
      props: {
        ...FAST_TIERING,
        ...s3.props('ext'),
        // Sweeps only when the test asks: each step below is one commit of at most 7 events.
        'auditlake.audit.tier.interval.ms': '3600000',
        'auditlake.audit.tier.batch.size': '7',
        'auditlake.audit.retention.interval.ms': '100',
      },
    });
    // retain.local.days 0: cleanup deletes what is tiered, so holes open up below the watermark.
    await postSettings(t, { ...PARQUET, 'audit.tier.retain.local.days': 0 });
    for (let r = 0; r < 4; r++) await t.ingest(Array.from({ length: 10 }, (_, i) => event({ eventId: `b${r}-${i}` })));
    const lastSeq = t.node.store.position.lastSeq;
    expect(lastSeq).toBe(41);

    let status = await tierStatus(t);
    expect(status.watermark.seq).toBe(0);
    expect(status.backlog).toBe(41);
    for (let sweeps = 0; status.watermark.seq < lastSeq; sweeps++) {
      expect(sweeps).toBeLessThan(41);
      const before = status.watermark.seq;
      await t.node.tiering.sweeper.sweep();
      status = await tierStatus(t);
      expect(status.lastError).toBeNull();
      expect(status.watermark.seq).toBeGreaterThan(before);
      expect(status.watermark).toEqual(await t.node.store.getMeta<Watermark>(WATERMARK_META));
      expect(status.backlog).toBe(await storedAfter(t, status.watermark.seq));
      expect(status.backlog).toBe(lastSeq - status.watermark.seq);
    }
    expect(status.backlog).toBe(0);
    // Cleanup deletes the tiered events (holes below the watermark); the backlog stays exact.
    await expect.poll(async () => (await t.node.store.readBySeq(0, 100)).length, { timeout: 30_000 }).toBe(0);
    await t.ingest([event({ eventId: 'after-cleanup' })]);
    status = await tierStatus(t);
    expect(status.backlog).toBe(1);
    expect(status.backlog).toBe(await storedAfter(t, status.watermark.seq));
  }, 120_000);

  it('retentionHeldByTerm: how far retention counts the log as tiered when a later term than the watermark\'s ordered entries under it', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.retention.interval.ms': '100' } });
    const { store } = t.node;
    // Seqs 1..5 in term 1, 6..10 in term 2; a watermark at 10 vouched for in term 1 — as a
    // standby holds it when its dead leader tiered 6..10 from another log, and it ordered its own.
    const events = (from: number) => Array.from({ length: 5 }, (_, i) => validateEvent(event({ eventId: `t${from + i}` }), i, { nowMs: Date.now() }));
    await store.append(events(1), { sequencer: () => 1 });
    await store.append(events(6), { sequencer: () => 2 });
    await store.putMeta({ [WATERMARK_META]: { seq: 10, ingestTs: Date.now() }, [WATERMARK_TERM_META]: 1 });
    await expect.poll(async () => (await tierStatus(t)).retentionHeldByTerm, { timeout: 10_000 }).toEqual({ throughSeq: 5, watermarkSeq: 10 });
    // Vouched for in term 2 (the leader's sweep found the watermark in its log): nothing held.
    await store.putMeta({ [WATERMARK_TERM_META]: 2 });
    await expect.poll(async () => (await tierStatus(t)).retentionHeldByTerm, { timeout: 10_000 }).toBeNull();
  });
});
