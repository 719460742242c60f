// Goal: GET /admin/audit/ledger tells, per source that counts its events (sourceSeq), what
// arrived: the highest sourceSeq reached without a hole and the holes as ranges; admins only;
// a bad parameter is a 400 naming it; tierStatus sums it up.
import { describe, expect, it } from 'vitest';
import { event, INGEST_TOKEN, startTestNode } from './test-node.js';

describe('GET /admin/audit/ledger', () => {
  it('answers per source the contiguous sourceSeq and the gaps, for admins only', async () => {
    const t = await startTestNode();
    const sent = [1, 2, 3, 5, 6, 9];
    expect((await t.ingest(sent.map((s) => event({ eventId: `a${s}`, sourceId: 'plugin-a', sourceSeq: s })))).status).toBe(200);
    expect((await t.ingest([event({ eventId: 'b7', sourceId: 'plugin-b', sourceSeq: 7 }), event({ eventId: 'plain' })])).status).toBe(200);
    const res = await t.request('/admin/audit/ledger');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      sources: [
        { sourceId: 'plugin-a', received: 6, firstSourceSeq: 1, contiguousThrough: 3, highestSourceSeq: 9, gaps: [{ fromSeq: 4, toSeq: 4 }, { fromSeq: 7, toSeq: 8 }], missing: 3 },
        { sourceId: 'plugin-b', received: 1, firstSourceSeq: 7, contiguousThrough: 7, highestSourceSeq: 7, gaps: [], missing: 0 },
      ],
      sourcesWithGaps: 1,
      missing: 3,
    });
    const tierStatus = async () => ((await (await t.request('/admin/audit/settings')).json()) as { tierStatus: { ledger: unknown } }).tierStatus.ledger;
    expect(await tierStatus()).toEqual({ sources: 2, sourcesWithGaps: 1, missing: 3 });
    // The late events fill the holes.
    expect((await t.ingest([4, 7, 8].map((s) => event({ eventId: `late${s}`, sourceId: 'plugin-a', sourceSeq: s })))).status).toBe(200);
    const one = (await (await t.request('/admin/audit/ledger?sourceId=plugin-a')).json()) as { sources: unknown[]; missing: number };
    expect(one).toEqual({ sources: [{ sourceId: 'plugin-a', received: 9, firstSourceSeq: 1, contiguousThrough: 9, highestSourceSeq: 9, gaps: [], missing: 0 }], sourcesWithGaps: 0, missing: 0 });
    expect((await t.request('/admin/audit/ledger', { token: INGEST_TOKEN })).status).toBe(403);
    expect(await tierStatus()).toEqual({ sources: 2, sourcesWithGaps: 0, missing: 0 });
    const bad = await t.request('/admin/audit/ledger?sourceId=');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/parameter sourceId must be one non-empty source id/);
  });
});

describe('the ledger in /metrics', () => {
  it('counts the missing sourceSeqs and the sources with holes', async () => {
    const t = await startTestNode();
    expect((await t.ingest([1, 2, 5].map((s) => event({ eventId: `m${s}`, sourceId: 'plugin-m', sourceSeq: s })))).status).toBe(200);
    const text = await (await t.request('/metrics', { token: null })).text();
    expect(text).toMatch(/^auditlake_ledger_missing_source_seqs 2$/m);
    expect(text).toMatch(/^auditlake_ledger_sources_with_gaps 1$/m);
  });
});
