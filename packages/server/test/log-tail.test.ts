// Goal: a single node keeps the log tail only while it tiers (nothing else reads it there).
import { describe, expect, it } from 'vitest';
import { postSettings } from './tier-helpers.js';
import { event, startTestNode } from './test-node.js';

const PARQUET = { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://auditlake/audit', 'audit.tier.connectionId': 'local' };

describe('the log tail of a single node', () => {
  it('is kept while tiering is on and dropped when it is switched off', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.tier.interval.ms': '3600000' }, node: { embeddedS3Port: 0 } });
    const store = t.node.store;
    expect((await t.ingest([event({ eventId: 'a' }), event({ eventId: 'b' })])).status).toBe(200);
    // Tiering off: nothing kept.
    expect(store.logTailHeldBytes).toBe(0);
    expect((await postSettings(t, PARQUET)).status).toBe(200);
    const before = store.logTailHeldBytes;
    expect((await t.ingest([event({ eventId: 'c' }), event({ eventId: 'd' })])).status).toBe(200);
    expect(store.logTailHeldBytes).toBeGreaterThan(before);
    // Off again: dropped at once, and writes no longer fill it.
    expect((await postSettings(t, { 'audit.tier.mode': 'none' })).status).toBe(200);
    expect(store.logTailHeldBytes).toBe(0);
    expect((await t.ingest([event({ eventId: 'e' })])).status).toBe(200);
    expect(store.logTailHeldBytes).toBe(0);
  });
});
