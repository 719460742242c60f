// Goal: read sampling applies to allowed data:Select events only; DENY is never sampled out; a sourceSeq sampled out is received in the completeness ledger, no hole.
import { describe, expect, it } from 'vitest';
import { event, startTestNode } from './test-node.js';

describe('read sampling', () => {
  it('drops allowed selects when audit.read.enabled=false, keeps DENY and writes, and reports sampledOut', async () => {
    const t = await startTestNode();
    expect((await t.request('/admin/audit/settings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"audit.read.enabled":false}' })).status).toBe(200);
    const res = await t.ingest([
      event({ eventId: 'sel-allow', decision: 'ALLOW' }),
      event({ eventId: 'sel-nodecision' }),
      event({ eventId: 'sel-deny', decision: 'DENY' }),
      event({ eventId: 'insert', action: 'data:Insert' }),
    ]);
    expect(res.json).toEqual({ status: 'ok', ingested: 2, sampledOut: 2 });
    const ids = (await t.stored()).filter((e) => e.source === 'trino').map((e) => e.eventId).sort();
    expect(ids).toEqual(['insert', 'sel-deny']);
    const metrics = await (await t.request('/metrics', { token: null })).text();
    expect(metrics).toMatch(/^auditlake_events_sampled_out_total 2$/m);
  });

  it('keeps about the configured fraction of allowed selects, replayably with a seeded random', async () => {
    // A fixed sequence stands in for Math.random so the kept set is known exactly.
    const draws = [0.1, 0.9, 0.3, 0.7, 0.49, 0.51];
    let i = 0;
    const t = await startTestNode({ props: { 'auditlake.audit.read.sample.rate': '0.5' }, node: { random: () => draws[i++ % draws.length]! } });
    const res = await t.ingest(draws.map((_, n) => event({ eventId: `s${n}` })));
    expect(res.json).toEqual({ status: 'ok', ingested: 3, sampledOut: 3 });
    expect((await t.stored()).map((e) => e.eventId).sort()).toEqual(['s0', 's2', 's4']);
  });

  it('never samples out DENY events even at rate 0', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.read.sample.rate': '0' } });
    const res = await t.ingest([event({ decision: 'DENY', eventId: 'd' }), event({ eventId: 'a' })]);
    expect(res.json).toEqual({ status: 'ok', ingested: 1, sampledOut: 1 });
    expect((await t.stored()).map((e) => e.eventId)).toEqual(['d']);
  });

  it('records the sourceSeqs it samples out in the completeness ledger as received: no gaps, no missing, across a restart', async () => {
    let i = 0;
    // Every other allowed select is dropped: sourceSeqs 2, 4, … 200 never reach the log.
    const start = (dataDir?: string) =>
      startTestNode({ props: { 'auditlake.audit.read.sample.rate': '0.5' }, node: { random: () => (i++ % 2 === 0 ? 0.1 : 0.9) }, ...(dataDir ? { dataDir } : {}) });
    const t = await start();
    const batch = Array.from({ length: 200 }, (_, n) => event({ eventId: `sampled-${n + 1}`, decision: 'ALLOW', sourceId: 'sampled-src', sourceSeq: n + 1 }));
    expect((await t.ingest(batch)).json).toEqual({ status: 'ok', ingested: 100, sampledOut: 100 });
    expect(await t.stored()).toHaveLength(100);
    const expected = { sourceId: 'sampled-src', received: 200, firstSourceSeq: 1, contiguousThrough: 200, highestSourceSeq: 200, gaps: [], missing: 0 };
    const ledger = async (node: typeof t) => (await (await node.request('/admin/audit/ledger?sourceId=sampled-src')).json()) as { sources: unknown[]; missing: number; sourcesWithGaps: number };
    expect(await ledger(t)).toMatchObject({ sources: [expected], missing: 0, sourcesWithGaps: 0 });
    const metrics = await (await t.request('/metrics', { token: null })).text();
    expect(metrics).toMatch(/^auditlake_ledger_missing_source_seqs 0$/m);
    expect(metrics).toMatch(/^auditlake_ledger_sources_with_gaps 0$/m);
    // A hole that is one stays one: 202 never came.
    expect((await t.ingest([event({ eventId: 'sampled-203', decision: 'DENY', sourceId: 'sampled-src', sourceSeq: 203 })])).json).toEqual({ status: 'ok', ingested: 1 });
    expect(await ledger(t)).toMatchObject({ sources: [{ ...expected, received: 201, highestSourceSeq: 203, gaps: [{ fromSeq: 201, toSeq: 202 }], missing: 2 }], missing: 2 });
    await t.node.close();
    const again = await start(t.dataDir);
    expect(await ledger(again)).toMatchObject({ sources: [{ ...expected, received: 201, highestSourceSeq: 203, gaps: [{ fromSeq: 201, toSeq: 202 }], missing: 2 }], missing: 2 });
  });

  it('omits sampledOut when nothing was sampled out', async () => {
    const t = await startTestNode();
    expect((await t.ingest([event()])).json).toEqual({ status: 'ok', ingested: 1 });
  });
});
