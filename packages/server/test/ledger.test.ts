// Goal: GET /admin/audit/ledger tells, per source that counts its events (sourceSeq), what
// arrived: the highest sourceSeq reached without a hole and the holes as ranges; and per day
// and source how many events were received, are stored, are tiered and were pruned; admins
// only; a bad parameter is a 400 naming it; tierStatus sums it up. The sources are answered in
// pages (limit, after), each source's newest holes up to gapsLimit, the totals over all of
// them; the day rows in pages of their own (daysLimit, daysAfter). A flood of new sources is tracked up to the ledger's bound and counted together past
// it, in the answer, tierStatus and /metrics alike; idle sources give their places up once the
// ledger is nearly full, their holes still counted.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditEvent } from '@auditlake/model';
import { AuditStore, DAY_LEDGER_SOURCES_MAX, LEDGER_RETIRE_FROM_SOURCES, LEDGER_SOURCE_IDLE_DAYS, LEDGER_SOURCES_MAX, OTHER_SOURCES, dayOf } from '@auditlake/store';
import { describe, expect, it, onTestFinished } from 'vitest';
import { FAST_TIERING, externalS3, postSettings, waitUntilTiered } from './tier-helpers.js';
import { event, INGEST_TOKEN, startTestNode } from './test-node.js';

const HOUR = 3_600_000;

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
        { sourceId: 'plugin-a', received: 6, firstSourceSeq: 1, contiguousThrough: 3, highestSourceSeq: 9, gaps: [{ fromSeq: 4, toSeq: 4 }, { fromSeq: 7, toSeq: 8 }], gapCount: 2, gapsTruncated: false, missing: 3 },
        { sourceId: 'plugin-b', received: 1, firstSourceSeq: 7, contiguousThrough: 7, highestSourceSeq: 7, gaps: [], gapCount: 0, gapsTruncated: false, missing: 0 },
      ],
      next: null,
      sourcesTracked: 2,
      sourcesWithGaps: 1,
      missing: 3,
      otherSourceEvents: 0,
      sourcesRetired: 0,
      retiredMissing: 0,
      days: expect.any(Array),
      daysNext: null,
    });
    const tierStatus = async () => ((await (await t.request('/admin/audit/settings')).json()) as { tierStatus: { ledger: unknown } }).tierStatus.ledger;
    expect(await tierStatus()).toEqual({ sources: 2, sourcesWithGaps: 1, missing: 3, sourcesRetired: 0, retiredMissing: 0 });
    // The late events fill the holes.
    expect((await t.ingest([4, 7, 8].map((s) => event({ eventId: `late${s}`, sourceId: 'plugin-a', sourceSeq: s })))).status).toBe(200);
    const one = (await (await t.request('/admin/audit/ledger?sourceId=plugin-a')).json()) as { sources: unknown[]; missing: number };
    expect(one).toMatchObject({ sources: [{ sourceId: 'plugin-a', received: 9, firstSourceSeq: 1, contiguousThrough: 9, highestSourceSeq: 9, gaps: [], missing: 0 }], sourcesWithGaps: 0, missing: 0 });
    expect((await t.request('/admin/audit/ledger', { token: INGEST_TOKEN })).status).toBe(403);
    expect(await tierStatus()).toEqual({ sources: 2, sourcesWithGaps: 0, missing: 0, sourcesRetired: 0, retiredMissing: 0 });
    const bad = await t.request('/admin/audit/ledger?sourceId=');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/parameter sourceId must be one non-empty source id/);
  });
});

describe('GET /admin/audit/ledger in pages', () => {
  it('walks every source once with limit and after, each with its newest gapsLimit holes, the totals over all sources on every page', async () => {
    const t = await startTestNode();
    // 250 sources, each with sourceSeqs 0, 2, 4, 6: three holes of one.
    const ids = Array.from({ length: 250 }, (_, i) => `src-${String((i * 7) % 250).padStart(3, '0')}`);
    expect((await t.ingest(ids.flatMap((id) => [0, 2, 4, 6].map((s) => event({ eventId: `${id}-${s}`, sourceId: id, sourceSeq: s }))))).status).toBe(200);
    type Page = { sources: Array<{ sourceId: string; gaps: unknown[]; gapCount: number; gapsTruncated: boolean; missing: number }>; next: string | null; sourcesTracked: number; sourcesWithGaps: number; missing: number };
    const ask = async (query: string) => {
      const res = await t.request(`/admin/audit/ledger?${query}`);
      expect(res.status).toBe(200);
      return (await res.json()) as Page;
    };
    const seen: string[] = [];
    let pages = 0;
    for (let after: string | null = null; ; pages++) {
      const page = await ask(`limit=100&gapsLimit=2${after === null ? '' : `&after=${encodeURIComponent(after)}`}`);
      expect(page).toMatchObject({ sourcesTracked: 250, sourcesWithGaps: 250, missing: 750 });
      expect(page.sources.length).toBeLessThanOrEqual(100);
      for (const source of page.sources) {
        seen.push(source.sourceId);
        expect(source).toMatchObject({ gaps: [{ fromSeq: 3, toSeq: 3 }, { fromSeq: 5, toSeq: 5 }], gapCount: 3, gapsTruncated: true, missing: 3 });
      }
      if (page.next === null) break;
      expect(page.next).toBe(page.sources[page.sources.length - 1]?.sourceId);
      after = page.next;
    }
    expect(pages + 1).toBe(3);
    expect(seen).toEqual([...ids].sort());
    // The defaults: 100 sources, every hole (fewer than 100).
    const first = await ask('');
    expect(first.sources.map((s) => s.sourceId)).toEqual(seen.slice(0, 100));
    expect(first).toMatchObject({ next: 'src-099' });
    expect(first.sources[0]).toMatchObject({ gapCount: 3, gapsTruncated: false });
    // One source, and only the counts of holes.
    expect(await ask('sourceId=src-007&gapsLimit=1')).toMatchObject({ sources: [{ sourceId: 'src-007', gaps: [{ fromSeq: 5, toSeq: 5 }], gapCount: 3, gapsTruncated: true, missing: 3 }], next: null, sourcesWithGaps: 1, missing: 3 });
    expect((await ask('limit=1&gapsLimit=0')).sources).toEqual([expect.objectContaining({ sourceId: 'src-000', gaps: [], gapCount: 3, gapsTruncated: true })]);
  });
});

describe('the ledger per day', () => {
  it('counts per day and source the events received, stored, tiered and pruned, as tiering and retention move them', async () => {
    const s3 = await externalS3();
    const t = await startTestNode({ props: { ...FAST_TIERING, ...s3.props('ext'), 'auditlake.audit.retention.interval.ms': '100' } });
    const now = Date.now();
    // Three days back from now, two sources, one of them sending its own sourceId.
    const sent = Array.from({ length: 36 }, (_, i) => {
      const ageHours = 1 + (i % 3) * 24;
      return i % 2 === 0 ? { eventId: `d${i}`, ts: now - ageHours * HOUR, source: 'spark', sourceId: 'plugin-d', sourceSeq: i + 1 } : { eventId: `d${i}`, ts: now - ageHours * HOUR, source: 'trino' };
    });
    expect((await t.ingest(sent.map((e) => event(e)))).status).toBe(200);
    const rowsOf = (pruned: (ts: number) => boolean, tiered: boolean) => {
      const rows = new Map<string, { day: string; sourceId: string | null; source: string; received: number; stored: number; tiered: number; pruned: number }>();
      for (const e of sent) {
        const day = dayOf(e.ts);
        const key = `${day}!${JSON.stringify([e.sourceId ?? null, e.source])}`;
        const row = rows.get(key) ?? { day, sourceId: e.sourceId ?? null, source: e.source, received: 0, stored: 0, tiered: 0, pruned: 0 };
        row.received++;
        if (pruned(e.ts)) row.pruned++;
        else row.stored++;
        if (tiered) row.tiered++;
        rows.set(key, row);
      }
      return [...rows.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([, row]) => row);
    };
    type Days = { days: Array<{ source: string }> };
    // The node's own records (settings changes) count under source auditlake: left out here.
    const ours = async (query = '') => ((await (await t.request(`/admin/audit/ledger${query}`)).json()) as Days).days.filter((row) => row.source !== 'auditlake');
    expect(await ours()).toEqual(rowsOf(() => false, false));

    // Tiered, then the local copies older than a day are deleted.
    expect((await postSettings(t, { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://ext/audit', 'audit.tier.connectionId': 'ext', 'audit.tier.retain.local.days': 1 })).status).toBe(200);
    await waitUntilTiered(t);
    const settled = rowsOf((ts) => ts < now - 24 * HOUR, true);
    expect(settled.some((row) => row.pruned > 0) && settled.some((row) => row.stored > 0)).toBe(true);
    await expect.poll(() => ours(), { timeout: 20_000 }).toEqual(settled);

    // A window of days (as days or as times) and one source.
    const middle = dayOf(now - 25 * HOUR);
    expect(await ours(`?from=${middle}&to=${middle}`)).toEqual(settled.filter((row) => (row as { day: string }).day === middle));
    expect(await ours(`?from=${now - 25 * HOUR}&to=${new Date(now - 25 * HOUR).toISOString()}`)).toEqual(settled.filter((row) => (row as { day: string }).day === middle));
    expect(await ours('?sourceId=plugin-d')).toEqual(settled.filter((row) => (row as { sourceId: string | null }).sourceId === 'plugin-d'));
    // Two rows at a time: the same rows, each once.
    const paged: unknown[] = [];
    for (let after: string | null = ''; after !== null; ) {
      const page = (await (await t.request(`/admin/audit/ledger?daysLimit=2${after === '' ? '' : `&daysAfter=${after}`}`)).json()) as Days & { daysNext: string | null };
      expect(page.days.length).toBeLessThanOrEqual(2);
      paged.push(...page.days.filter((row) => row.source !== 'auditlake'));
      after = page.daysNext;
    }
    expect(paged).toEqual(settled);
  });

  const refusals: Array<[string, RegExp]> = [
    ['?from=2026-02-30', /^parameter from is not a calendar day: 2026-02-30$/],
    ['?to=yesterday', /^parameter to must be epoch millis or an ISO-8601 time with a zone/],
    ['?from=2026-11-03&to=2026-11-02', /^parameter from must not be after to: 2026-11-03 > 2026-11-02$/],
    ['?form=2026-11-02', /^unknown parameter: form \(known: sourceId, after, limit, gapsLimit, from, to, daysAfter, daysLimit\)$/],
    ['?from=2026-11-02&from=2026-11-03', /^parameter from must be given once/],
    // A time past the last an event may have names no day (it was a 500).
    ['?from=9007199254740991', /^parameter from must be a time from 0 to 253402300799999 \(9999-12-31T23:59:59\.999Z\): 9007199254740991$/],
    ['?to=253402300800000', /^parameter to must be a time from 0 to 253402300799999 \(9999-12-31T23:59:59\.999Z\): 253402300800000$/],
    // Pages: a bounded number of sources and of holes per source.
    ['?limit=0', /^parameter limit must be an integer from 1 to 1000: 0$/],
    ['?limit=1001', /^parameter limit must be an integer from 1 to 1000: 1001$/],
    ['?limit=ten', /^parameter limit must be an integer from 1 to 1000: ten$/],
    ['?limit=10&limit=20', /^parameter limit must be an integer from 1 to 1000: \["10","20"\]$/],
    ['?gapsLimit=-1', /^parameter gapsLimit must be an integer from 0 to 1000: -1$/],
    ['?gapsLimit=1001', /^parameter gapsLimit must be an integer from 0 to 1000: 1001$/],
    ['?after=', /^parameter after must be one non-empty sourceId/],
    ['?after=a&after=b', /^parameter after must be one non-empty sourceId/],
    ['?after=a&sourceId=b', /^parameter after pages through all sources: it cannot be combined with sourceId$/],
    ['?daysLimit=0', /^parameter daysLimit must be an integer from 1 to 10000: 0$/],
    ['?daysLimit=10001', /^parameter daysLimit must be an integer from 1 to 10000: 10001$/],
    ['?daysAfter=not%20a%20cursor', /^parameter daysAfter must be the daysNext of an answer before: not a cursor$/],
    ['?daysAfter=eHl6', /^parameter daysAfter must be the daysNext of an answer before: eHl6$/],
  ];
  for (const [query, message] of refusals) {
    it(`refuses ${query} with 400 naming the problem`, async () => {
      const t = await startTestNode();
      const res = await t.request(`/admin/audit/ledger${query}`);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(message);
    });
  }
});

describe('the ledger in /metrics', () => {
  it('refuses a sourceSeq past SOURCE_SEQ_MAX with a 400 naming it, storing nothing of the request', async () => {
    const t = await startTestNode();
    expect((await t.ingest([event({ eventId: 'w1', sourceId: 'wild', sourceSeq: 0 })])).status).toBe(200);
    const res = await t.ingest([event({ eventId: 'w2', sourceId: 'wild', sourceSeq: 1 }), event({ eventId: 'w3', sourceId: 'wild', sourceSeq: 2 ** 53 - 1 })]);
    expect(res.status).toBe(400);
    expect(res.json['error']).toBe("events[1].sourceSeq must be at most 99999999999 (a source's own count of its events): 9007199254740991");
    expect((await t.stored()).map((e) => e.eventId)).toEqual(['w1']);
    const ledger = (await (await t.request('/admin/audit/ledger?sourceId=wild')).json()) as { sources: unknown[]; missing: number };
    expect(ledger).toMatchObject({ sources: [{ sourceId: 'wild', received: 1, highestSourceSeq: 0, missing: 0 }], missing: 0 });
  });

  it('counts the missing sourceSeqs and the sources with holes', async () => {
    const t = await startTestNode();
    expect((await t.ingest([1, 2, 5].map((s) => event({ eventId: `m${s}`, sourceId: 'plugin-m', sourceSeq: s })))).status).toBe(200);
    const text = await (await t.request('/metrics', { token: null })).text();
    expect(text).toMatch(/^auditlake_ledger_missing_source_seqs 2$/m);
    expect(text).toMatch(/^auditlake_ledger_sources_with_gaps 1$/m);
    // [1, 2] and [5]: two ranges held, against the bound the help text names.
    expect(text).toMatch(/^auditlake_ledger_ranges 2$/m);
    expect(text).toMatch(/^auditlake_ledger_sources_tracked 1$/m);
    expect(text).toMatch(/^auditlake_ledger_untracked_source_events 0$/m);
    expect(text).toMatch(/^auditlake_ledger_sources_retired 0$/m);
    expect(text).toContain('# HELP auditlake_ledger_ranges Ranges of received sourceSeqs the completeness ledger holds over all sources (at most 200000;');
  });
});

describe('the ledger under a flood of sources', () => {
  it('tracks sources up to its bound and counts the rest together, in the answer, tierStatus and /metrics', async () => {
    expect(DAY_LEDGER_SOURCES_MAX).toBe(LEDGER_SOURCES_MAX);
    const t = await startTestNode();
    const ts = Date.now();
    // A source with a hole, then one new source per event, 20 past the bound.
    expect((await t.ingest([1, 3].map((s) => event({ eventId: `h${s}`, ts, sourceId: 'honest', sourceSeq: s })))).status).toBe(200);
    const flood = Array.from({ length: LEDGER_SOURCES_MAX + 19 }, (_, i) => event({ eventId: `f${i}`, ts, sourceId: `flood-${String(i).padStart(6, '0')}`, sourceSeq: 1 }));
    for (let i = 0; i < flood.length; i += 5_000) expect((await t.ingest(flood.slice(i, i + 5_000))).status).toBe(200);
    type Ledger = { sources: unknown[]; sourcesWithGaps: number; missing: number; otherSourceEvents: number; days: Array<{ day: string; sourceId: string | null; source: string | null; received: number }> };
    const ledger = (await (await t.request('/admin/audit/ledger')).json()) as Ledger;
    // A page of the default 100 sources, the totals over all of them.
    expect(ledger.sources).toHaveLength(100);
    expect(ledger).toMatchObject({ sourcesTracked: LEDGER_SOURCES_MAX, sourcesWithGaps: 1, missing: 1, otherSourceEvents: 20 });
    let tracked = 0;
    for (let after: string | null = ''; after !== null; ) {
      const page = (await (await t.request(`/admin/audit/ledger?limit=1000&from=2000-01-01&to=2000-01-01${after === '' ? '' : `&after=${encodeURIComponent(after)}`}`)).json()) as Ledger & { next: string | null };
      tracked += page.sources.length;
      after = page.next;
    }
    expect(tracked).toBe(LEDGER_SOURCES_MAX);
    // The day's rows: as many sources as the bound (the node's own records may be one of them),
    // the rest in its overflow row; their events all counted.
    // More rows than a page holds (at most 10,000): walked with daysAfter.
    expect(ledger.days).toHaveLength(1_000);
    const rows: Ledger['days'] = [];
    for (let after: string | null = ''; after !== null; ) {
      const page = (await (await t.request(`/admin/audit/ledger?limit=1&daysLimit=10000${after === '' ? '' : `&daysAfter=${after}`}`)).json()) as Ledger & { daysNext: string | null };
      expect(page.days.length).toBeLessThanOrEqual(10_000);
      rows.push(...page.days);
      after = page.daysNext;
    }
    const day = rows.filter((row) => row.day === dayOf(ts));
    const sourceRows = day.filter((row) => row.source !== null);
    expect(sourceRows).toHaveLength(DAY_LEDGER_SOURCES_MAX);
    const folded = 1 + flood.length - sourceRows.filter((row) => row.source !== 'auditlake').length;
    expect(folded).toBeGreaterThanOrEqual(20);
    // The node's own records (integrity checkpoints, written when their timer says) count in the
    // overflow row too when the first of them found the day full: none there once they have a row.
    const overflow = day.filter((row) => row.source === null);
    const ownFolded = (overflow[0]?.received ?? 0) - folded;
    expect(ownFolded).toBeGreaterThanOrEqual(0);
    if (sourceRows.some((row) => row.source === 'auditlake')) expect(ownFolded).toBe(0);
    expect(overflow).toEqual([{ day: dayOf(ts), sourceId: OTHER_SOURCES, source: null, received: folded + ownFolded, stored: folded + ownFolded, tiered: 0, pruned: 0 }]);
    expect(day.filter((row) => row.source !== 'auditlake').reduce((n, row) => n + row.received, 0)).toBe(flood.length + 2 + ownFolded);
    const tierStatus = ((await (await t.request('/admin/audit/settings')).json()) as { tierStatus: { ledger: unknown } }).tierStatus.ledger;
    expect(tierStatus).toEqual({ sources: LEDGER_SOURCES_MAX, sourcesWithGaps: 1, missing: 1, sourcesRetired: 0, retiredMissing: 0 });
    const text = await (await t.request('/metrics', { token: null })).text();
    expect(text).toMatch(/^auditlake_ledger_missing_source_seqs 1$/m);
    expect(text).toMatch(/^auditlake_ledger_sources_with_gaps 1$/m);
    // The bound reached shows where an operator alerts: the flood's last 20 events are untracked.
    expect(text).toMatch(new RegExp(`^auditlake_ledger_sources_tracked ${LEDGER_SOURCES_MAX}$`, 'm'));
    expect(text).toMatch(/^auditlake_ledger_untracked_source_events 20$/m);
  });

  it('answers the idle sources the ledger retired: counted in the answer and /metrics, their holes still missing', async () => {
    // The store written as a single node writes it (term 0), over 32 days of events: a source
    // with a hole and a crowd on the first, then one source each day after.
    const dataDir = await mkdtemp(join(tmpdir(), 'auditlake-ledger-idle-'));
    onTestFinished(() => rm(dataDir, { recursive: true, force: true }));
    let now = Date.UTC(2026, 0, 1, 12);
    const store = await AuditStore.open({ location: join(dataDir, 'store'), sequencer: () => 0, now: () => now });
    const ev = (eventId: string, sourceId: string, sourceSeq: number): AuditEvent => ({ eventId, userId: 'alice', source: 'trino', action: 'data:Select', resource: '', decision: 'ALLOW', tables: [], query: '', details: '', timestamp: now, sourceId, sourceSeq });
    await store.append([ev('g1', 'gone', 1), ev('g3', 'gone', 3)]);
    await store.append(Array.from({ length: LEDGER_RETIRE_FROM_SOURCES }, (_, i) => ev(`c${i}`, `crowd-${i}`, 0)));
    for (let day = 1; day <= LEDGER_SOURCE_IDLE_DAYS + 1; day++) {
      now += 86_400_000;
      await store.append([ev(`d${day}`, 'daily', day)]);
    }
    await store.close();

    const t = await startTestNode({ dataDir });
    const ledger = (await (await t.request('/admin/audit/ledger')).json()) as Record<string, unknown>;
    expect(ledger).toMatchObject({ sourcesTracked: 1, missing: 0, sourcesRetired: LEDGER_RETIRE_FROM_SOURCES + 1, retiredMissing: 1, next: null });
    expect(ledger['sources']).toEqual([expect.objectContaining({ sourceId: 'daily', received: LEDGER_SOURCE_IDLE_DAYS + 1 })]);
    const text = await (await t.request('/metrics', { token: null })).text();
    expect(text).toMatch(new RegExp(`^auditlake_ledger_sources_retired ${LEDGER_RETIRE_FROM_SOURCES + 1}$`, 'm'));
    expect(text).toMatch(/^auditlake_ledger_missing_source_seqs 1$/m);
    expect(text).toMatch(/^auditlake_ledger_sources_tracked 1$/m);
    const tierStatus = ((await (await t.request('/admin/audit/settings')).json()) as { tierStatus: { ledger: unknown } }).tierStatus.ledger;
    expect(tierStatus).toEqual({ sources: 1, sourcesWithGaps: 0, missing: 0, sourcesRetired: LEDGER_RETIRE_FROM_SOURCES + 1, retiredMissing: 1 });
  });
});
