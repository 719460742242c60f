// Goal: tierStatus, answered from memory, stays exact — at every sweep of a long backlog the backlog is the number of stored events after the watermark (counted here by reading them), and the watermark is the one the sweep replicated, also once local cleanup leaves holes below it.
import { WATERMARK_META, type Watermark } from '@auditlake/lake';
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
});
