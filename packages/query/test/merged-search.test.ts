// Goal: the merged reader returns the sorted, de-duplicated union of local and tiered events, skips tiers only when they cannot matter, prunes files and row groups (proved by bytes fetched), and names unreadable tiers.
import { AuditParquetFile, bytesSource, countingSource, encodeAuditParquet, ParquetFooterCache, TextProbePool, type CountingSource } from '@auditlake/format';
import { AuditError, AuditErrorCode, compileFilter, isAfterCursor, type SearchFilter, type StoredEvent } from '@auditlake/model';
import { afterAll, describe, expect, it } from 'vitest';
import type { TierFile, TierSource } from '@auditlake/lake';
import { mergedSearch } from '../src/index.js';

const DAY = 86_400_000;
const T0 = 1_790_000_000_000;

function ev(i: number, timestamp: number, overrides: Partial<StoredEvent> = {}): StoredEvent {
  return { eventId: `e${i}`, userId: i % 2 ? 'alice' : 'bob', source: 'trino', action: 'data:Select', resource: '', decision: 'ALLOW', tables: ['t'], query: `q${i}`, details: '', timestamp, ingestTs: timestamp + 5, seq: i, term: 0, ...overrides };
}

/** A tier whose files are one Parquet file per day, counting every byte read. */
const workers = new TextProbePool({ threadsMax: 2 });
afterAll(() => workers.close());

function tier(name: string, days: StoredEvent[][], footers?: ParquetFooterCache, textProbes?: TextProbePool): TierSource & { sources: CountingSource[] } {
  const files = days.map((events, d) => ({ file: { key: `f${d}`, eventDate: `d${d}`, rows: events.length, tsMin: Math.min(...events.map((e) => e.timestamp)), tsMax: Math.max(...events.map((e) => e.timestamp)) }, bytes: encodeAuditParquet(events, { rowGroupSize: 50 }) }));
  const sources: CountingSource[] = [];
  return {
    name,
    sources,
    ...(footers ? { footers } : {}),
    ...(textProbes ? { textProbes } : {}),
    listFiles: async () => files.map((f) => f.file),
    open: async (file) => {
      const source = countingSource(bytesSource(files.find((f) => f.file.key === file.key)!.bytes));
      sources.push(source);
      return source;
    },
  };
}

async function* local(events: StoredEvent[]) {
  for (const e of [...events].sort((a, b) => b.timestamp - a.timestamp || b.seq - a.seq)) yield e;
}

const filter = (over: Partial<SearchFilter> = {}): SearchFilter => ({ action: 'all', limit: 10, ...over });

/** An event by eventId, seq and time since T0. */
const named = (eventId: string, seq: number, sinceT0: number): StoredEvent => ev(seq, T0 + sinceT0, { eventId });

/**
 * Every page of a search, followed by its cursor (or resumeAfter) as a client would, each as
 * `eventId@time` (time since T0); the local events after the cursor are what the store would read.
 */
async function pagesOf(localEvents: StoredEvent[], tiers: TierSource[], limit: number, localCompleteFromMs: number | undefined): Promise<string[][]> {
  const shown: string[][] = [];
  let cursor: SearchFilter['cursor'];
  for (let page = 0; page < 20; page++) {
    const after = cursor;
    const result = await mergedSearch({ local: local(after ? localEvents.filter((e) => isAfterCursor(after, e)) : localEvents), tiers, filter: filter({ limit, ...(after ? { cursor: after } : {}) }), localCompleteFromMs });
    shown.push(result.events.map((e) => `${e.eventId}@${e.timestamp - T0}`));
    if (!result.truncated) break;
    const last = result.events.at(-1) ?? result.resumeAfter!;
    cursor = { timestamp: last.timestamp, ingestTs: last.ingestTs, eventId: last.eventId };
  }
  return shown;
}

/** The distinct eventIds the pages showed, sorted; and no page shows one twice. */
function idsReached(pages: string[][]): string[] {
  for (const page of pages) expect(new Set(page.map((e) => e.split('@')[0])).size).toBe(page.length);
  return [...new Set(pages.flat().map((e) => e.split('@')[0] as string))].sort();
}

describe('mergedSearch', () => {
  it('merges local and tiered, newest first, de-duplicated by eventId with the local copy winning', async () => {
    const tiered = Array.from({ length: 30 }, (_, i) => ev(i, T0 + i * 1000, { decision: 'ALLOW' }));
    const localEvents = [ev(25, T0 + 25_000, { decision: 'DENY' }), ev(100, T0 + 100_000)];
    const result = await mergedSearch({ local: local(localEvents), tiers: [tier('s3://a/b', [tiered])], filter: filter({ limit: 5 }), localCompleteFromMs: T0 + 50_000 });
    expect(result.events.map((e) => e.eventId)).toEqual(['e100', 'e29', 'e28', 'e27', 'e26']);
    expect(result.truncated).toBe(true);
    const all = await mergedSearch({ local: local(localEvents), tiers: [tier('s3://a/b', [tiered])], filter: filter({ limit: 100 }), localCompleteFromMs: undefined });
    expect(all.events).toHaveLength(31);
    expect(all.events.find((e) => e.eventId === 'e25')!.decision).toBe('DENY');
    expect(all.truncated).toBe(false);
  });

  it('of two copies of one eventId stored under different seqs (a re-send after retention), shows the first stored wherever each is', async () => {
    // The original, tiered and gone from the local store; a copy sent again later with other
    // content, stored under a new seq with a later time.
    const original = ev(5, T0 + 5_000, { decision: 'DENY', userId: 'bob' });
    const forged = ev(5, T0 + 50_000, { decision: 'ALLOW', userId: 'alice', seq: 99 });
    const others = Array.from({ length: 10 }, (_, i) => ev(10 + i, T0 + 10_000 + i * 1000));
    const shown = async (localEvents: StoredEvent[], days: StoredEvent[][]) =>
      (await mergedSearch({ local: local(localEvents), tiers: [tier('s3://a/b', days)], filter: filter({ limit: 100 }), localCompleteFromMs: T0 + 40_000 })).events.filter((e) => e.eventId === 'e5');
    // The copy still local, the original in the tier.
    expect(await shown([forged], [[original, ...others]])).toMatchObject([{ decision: 'DENY', userId: 'bob', timestamp: T0 + 5_000 }]);
    // Both tiered, the later copy in a newer file (read first).
    expect(await shown([], [[original, ...others], [forged]])).toMatchObject([{ decision: 'DENY', userId: 'bob' }]);
    // A filter both copies match (read through the column probe).
    const both = await mergedSearch({ local: local([forged]), tiers: [tier('s3://a/b', [[original, ...others]])], filter: filter({ limit: 100, table: 't' }), localCompleteFromMs: T0 + 40_000 });
    expect(both.events.filter((e) => e.eventId === 'e5')).toMatchObject([{ decision: 'DENY', userId: 'bob' }]);
    // A filter only the later copy matches still finds it: it is in the log.
    const allowOnly = await mergedSearch({ local: local([forged]), tiers: [tier('s3://a/b', [[original]])], filter: filter({ limit: 100, user: 'alice' }), localCompleteFromMs: T0 + 40_000 });
    expect(allowOnly.events.map((e) => [e.eventId, e.decision])).toEqual([['e5', 'ALLOW']]);
  });

  it('counts two copies of one eventId in a row group as one event: the page is full and truncated, and the next page goes on', async () => {
    // The original (seq 5) and its copy stored again later (seq 50), compacted into one group.
    const rows = [ev(5, T0 + 99_000), ev(6, T0 + 98_000), ev(7, T0 + 97_000), ev(5, T0 + 100_000, { seq: 50, userId: 'other' })];
    // The first stored copy is the record (shown at its own time), then the others, each once.
    expect(await pagesOf([], [tier('s3://a/b', [rows])], 1, T0 + 200_000)).toEqual([['e5@99000'], ['e6@98000'], ['e7@97000']]);
  });

  it('pages past local copies that tier copies stored first replace: no event is skipped', async () => {
    // X, Y, Z tiered first (seqs 1-3); their copies stored again later (seqs 10-12, newer
    // times) are local, with L, M and B, which were never tiered.
    const tiered = [named('X', 1, 1050), named('Y', 2, 900), named('Z', 3, 800)];
    const localEvents = [named('X', 10, 10_000), named('Y', 11, 9_000), named('Z', 12, 8_000), named('L', 20, 1100), named('M', 21, 1000), named('B', 22, 950)];
    const pages = (limit: number) => pagesOf(localEvents, [tier('s3://a/b', [tiered])], limit, T0 + 5_000);
    // The page that reads the tier gives the local copies' places to the tier's first copies,
    // and ends at the last local event it read (M): B comes on the next page.
    expect(await pages(4)).toEqual([['L@1100', 'X@1050', 'M@1000'], ['B@950', 'Y@900', 'Z@800']]);
    for (const limit of [1, 2, 3, 5, 6]) {
      // Every event is reached. (A page the local-complete window alone answers shows a later
      // copy where it is, and the first one comes again on a later page: by design, see mayTake.)
      expect({ limit, ids: idsReached(await pages(limit)) }).toEqual({ limit, ids: ['B', 'L', 'M', 'X', 'Y', 'Z'] });
    }
  });

  it('counts two local copies of one eventId (a standby holding a re-sent event twice) as one event: paging goes on past them', async () => {
    const localEvents = [named('X', 1, 1000), named('A', 2, 2000), named('B', 3, 3000), named('Y1', 4, 900), named('Y2', 5, 800), named('X', 10, 1500)];
    for (const limit of [1, 2, 3]) {
      // Every event is reached, the oldest included; on a page that read both copies, the first stored.
      expect({ limit, ids: idsReached(await pagesOf(localEvents, [], limit, undefined)) }).toEqual({ limit, ids: ['A', 'B', 'X', 'Y1', 'Y2'] });
    }
    const both = await mergedSearch({ local: local(localEvents), tiers: [], filter: filter({ limit: 10 }), localCompleteFromMs: undefined });
    expect(both.events.map((e) => `${e.eventId}@${e.timestamp - T0}`)).toEqual(['B@3000', 'A@2000', 'X@1000', 'Y1@900', 'Y2@800']);
  });

  it('skips the tiers when the local page is full of events newer than the local-complete point', async () => {
    // (Contrived: a tiered event inside the local-complete window would also be local.)
    const t = tier('s3://a/b', [[ev(1, T0 + DAY + 5)]]);
    const localEvents = Array.from({ length: 11 }, (_, i) => ev(10 + i, T0 + DAY + i));
    const result = await mergedSearch({ local: local(localEvents), tiers: [t], filter: filter(), localCompleteFromMs: T0 + DAY });
    expect(result.filesRead).toBe(0);
    expect(result.events).toHaveLength(10);
    // One event short of the cutoff: the tiers are read.
    const reading = await mergedSearch({ local: local(localEvents), tiers: [t], filter: filter(), localCompleteFromMs: T0 + DAY + 1 });
    expect(reading.filesRead).toBe(1);
  });

  it('skips files outside from/to and stops at files that cannot rank, fetching far fewer bytes', async () => {
    const days = Array.from({ length: 6 }, (_, d) => Array.from({ length: 200 }, (_, i) => ev(d * 1000 + i, T0 + d * DAY + i * 60_000)));
    const full = tier('s3://a/b', days);
    const all = await mergedSearch({ local: local([]), tiers: [full], filter: filter({ limit: 2000 }), localCompleteFromMs: undefined });
    expect(all.events).toHaveLength(1200);
    const allBytes = full.sources.reduce((s, x) => s + x.fetchedBytes, 0);

    const windowed = tier('s3://a/b', days);
    const oneDay = await mergedSearch({ local: local([]), tiers: [windowed], filter: filter({ limit: 2000, fromMs: T0 + 2 * DAY, toMs: T0 + 2 * DAY + 30 * 60_000 }), localCompleteFromMs: undefined });
    expect(oneDay.events.map((e) => e.eventId)).toEqual(Array.from({ length: 31 }, (_, i) => `e${2030 - i}`));
    expect(oneDay.filesRead).toBe(1);
    expect(windowed.sources.reduce((s, x) => s + x.fetchedBytes, 0)).toBeLessThan(allBytes / 4);

    const newest = tier('s3://a/b', days);
    const page = await mergedSearch({ local: local([]), tiers: [newest], filter: filter({ limit: 10 }), localCompleteFromMs: undefined });
    expect(page.events[0]!.eventId).toBe('e5199');
    expect(page.filesRead).toBe(1);
  });

  it('reads only the predicate columns of files without a match (column pushdown)', async () => {
    // Query text that does not compress away, so each file is far larger than one footer read.
    let seed = 7;
    const noise = () => Array.from({ length: 600 }, () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), (seed % 36).toString(36))).join('');
    const days = Array.from({ length: 4 }, (_, d) => Array.from({ length: 2000 }, (_, i) => ev(d * 10_000 + i, T0 + d * DAY + i, { userId: d === 3 ? 'carol' : 'bob', query: `SELECT ${noise()}` })));
    const full = tier('s3://a/b', days);
    await mergedSearch({ local: local([]), tiers: [full], filter: filter({ limit: 10_000 }), localCompleteFromMs: undefined });
    const fullBytes = full.sources.reduce((s, x) => s + x.fetchedBytes, 0);
    const probed = tier('s3://a/b', days);
    const result = await mergedSearch({ local: local([]), tiers: [probed], filter: filter({ user: 'carol', limit: 10_000 }), localCompleteFromMs: undefined });
    expect(result.events).toHaveLength(2000);
    expect(result.events.every((e) => e.userId === 'carol')).toBe(true);
    // Three of four files are probed on user_id only; the matching one is read whole.
    expect(probed.sources.reduce((s, x) => s + x.fetchedBytes, 0)).toBeLessThan(fullBytes * 0.6);
  });

  it('reads the row groups of a file newest first and stops once the page is full', async () => {
    let seed = 11;
    const noise = () => Array.from({ length: 200 }, () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), (seed % 36).toString(36))).join('');
    const oneDay = [Array.from({ length: 2000 }, (_, i) => ev(i, T0 + i * 1000, { query: noise() }))];
    const whole = tier('s3://a/b', oneDay);
    await mergedSearch({ local: local([]), tiers: [whole], filter: filter({ limit: 5000 }), localCompleteFromMs: undefined });
    const wholeBytes = whole.sources.reduce((s, x) => s + x.fetchedBytes, 0);
    const newest = tier('s3://a/b', oneDay);
    const page = await mergedSearch({ local: local([]), tiers: [newest], filter: filter({ limit: 10 }), localCompleteFromMs: undefined });
    expect(page.events.map((e) => e.eventId)).toEqual(Array.from({ length: 10 }, (_, i) => `e${1999 - i}`));
    expect(page.truncated).toBe(true);
    // 40 row groups of 50 rows: the newest group or two, and the footer, are all it reads.
    expect(newest.sources.reduce((s, x) => s + x.fetchedBytes, 0)).toBeLessThan(wholeBytes / 3);
  });

  it('applies the same filters to tiered events', async () => {
    const t = tier('s3://a/b', [Array.from({ length: 20 }, (_, i) => ev(i, T0 + i))]);
    const result = await mergedSearch({ local: local([]), tiers: [t], filter: filter({ user: 'alice', q: 'q1', limit: 100 }), localCompleteFromMs: undefined });
    expect(result.events.map((e) => e.eventId)).toEqual(['e19', 'e17', 'e15', 'e13', 'e11', 'e1']);
  });

  it('a free-text q returns exactly what a scan of every event with compileFilter returns, newest first (prefilter skips no match)', async () => {
    const users = ['alice', 'bob', 'Carol-Admin'];
    const days = Array.from({ length: 3 }, (_, d) =>
      Array.from({ length: 400 }, (_, i) => {
        const n = d * 1000 + i;
        // Matches in a dictionary column (user), in plain text in any case, in tables, and in details.
        return ev(n, T0 + d * DAY + i * 1000, {
          userId: users[n % 7 === 0 ? 2 : n % 2]!,
          query: n % 97 === 0 ? `SELECT * FROM sales.ADMIN_audit WHERE n = ${n}` : `SELECT ${n}`,
          tables: n % 89 === 0 ? ['x.admins'] : ['t'],
          details: n % 83 === 0 ? 'run by ADMIN' : `queryId=${n}`,
        });
      }),
    );
    const everything = days.flat();
    // The same event both local and tiered (with a different decision) must come back once, the local copy.
    const localCopy = { ...everything[700]!, decision: 'DENY' as const };
    for (const q of ['admin', 'sales.admin_audit', 'no-such-text', 'ADMIN']) {
      for (const limit of [5, 50, 5000]) {
        const want = compileFilter(filter({ q, limit }));
        const expected = [localCopy, ...everything.filter((e) => e.eventId !== localCopy.eventId)]
          .filter(want)
          .sort((a, b) => b.timestamp - a.timestamp || b.ingestTs - a.ingestTs || (a.eventId < b.eventId ? 1 : -1));
        // Inline, and with the prefilter in worker threads.
        for (const textProbes of [undefined, workers]) {
          const result = await mergedSearch({ local: local(want(localCopy) ? [localCopy] : []), tiers: [tier('s3://a/b', days, undefined, textProbes)], filter: filter({ q, limit }), localCompleteFromMs: undefined });
          expect(result.events.map((e) => e.eventId), `q=${q} limit=${limit}`).toEqual(expected.slice(0, limit).map((e) => e.eventId));
          expect(result.truncated).toBe(expected.length > limit);
          if (want(localCopy) && expected.slice(0, limit).includes(localCopy)) expect(result.events.find((e) => e.eventId === localCopy.eventId)!.decision).toBe('DENY');
        }
      }
    }
  });

  it('a q search stops early while prefilters run ahead: their late failures neither leak nor fail the answer', async () => {
    // One file, 8 groups of 50; q matches plenty in the newest group, so the page fills there.
    const events = Array.from({ length: 400 }, (_, i) => ev(i, T0 + i * 1000, { query: i >= 350 ? 'SELECT needle' : 'SELECT x' }));
    // Without sketches (as files written before them): else the older groups, which hold no
    // 'needle', would be ruled out by their footer sketch and never prefiltered at all.
    const bytes = encodeAuditParquet(events, { rowGroupSize: 50, rowGroupSketches: false });
    // The newest 4 groups (one prefilter batch) answer; older ones fail, after a while.
    const newest = (await AuditParquetFile.open(bytesSource(bytes))).footer.row_groups[4]!.columns[0]!.meta_data!;
    const newestStart = Number(newest.dictionary_page_offset ?? newest.data_page_offset);
    let failedLate = 0;
    const flaky: TierSource = {
      name: 's3://flaky/audit',
      listFiles: async () => [{ key: 'f', eventDate: 'd', rows: 400, tsMin: T0, tsMax: T0 + 399_000 }],
      open: async () => {
        const inner = bytesSource(bytes);
        return {
          byteLength: inner.byteLength,
          slice: async (start: number, end?: number) => {
            // The footer (to the file's end) and the newest groups answer; older groups fail, after a while.
            if (start >= newestStart || end === undefined || end === bytes.byteLength) return inner.slice(start, end);
            await new Promise((resolve) => setTimeout(resolve, 50));
            failedLate++;
            throw new Error('connection reset');
          },
        };
      },
    };
    const result = await mergedSearch({ local: local([]), tiers: [flaky], filter: filter({ q: 'needle', limit: 10 }), localCompleteFromMs: undefined });
    expect(result.events.map((e) => e.eventId)).toEqual(Array.from({ length: 10 }, (_, i) => `e${399 - i}`));
    expect(result.tierNote).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Read-ahead did start later groups (and they failed), unobserved.
    expect(failedLate).toBeGreaterThan(0);

    // Without an early stop the same failure is the tier's, named in tierNote.
    const all = await mergedSearch({ local: local([]), tiers: [flaky], filter: filter({ q: 'needle', limit: 100 }), localCompleteFromMs: undefined });
    expect(all.tierNote).toBe('tiered audit partly unavailable: s3://flaky/audit: connection reset');
  });

  it('a time-only window reads just the rows that can rank, and still returns exactly the newest, ties and local duplicates included', async () => {
    // Several events per ms (ties at every possible cut), two days, groups of 50.
    const days = Array.from({ length: 2 }, (_, d) => Array.from({ length: 600 }, (_, i) => ev(d * 1000 + i, T0 + d * DAY + Math.floor(i / 4) * 1000, { ingestTs: T0 + (i % 3) })));
    const everything = days.flat();
    const newest = (events: StoredEvent[]) => [...events].sort((a, b) => b.timestamp - a.timestamp || b.ingestTs - a.ingestTs || (a.eventId < b.eventId ? 1 : -1));
    // The newest tiered events are also local: they must count for the page (and come back once).
    const localCopies = newest(days[1]!).slice(0, 30).map((e) => ({ ...e, decision: 'DENY' as const }));
    for (const limit of [1, 3, 10, 49, 50, 51, 120, 700]) {
      for (const window of [{}, { fromMs: T0 + DAY, toMs: T0 + DAY + 100_000 }, { fromMs: T0 + 20_000, toMs: T0 + DAY + 3_000 }]) {
        const inWindow = (e: StoredEvent) => (window.fromMs === undefined || e.timestamp >= window.fromMs) && (window.toMs === undefined || e.timestamp <= window.toMs);
        const expected = newest(everything.filter(inWindow));
        const localInWindow = localCopies.filter(inWindow);
        const result = await mergedSearch({ local: local(localInWindow), tiers: [tier('s3://a/b', days)], filter: filter({ limit, ...window }), localCompleteFromMs: undefined });
        expect(result.events.map((e) => e.eventId), `limit ${limit} ${JSON.stringify(window)}`).toEqual(expected.slice(0, limit).map((e) => e.eventId));
        expect(result.truncated).toBe(expected.length > limit);
        for (const e of result.events) if (localInWindow.some((l) => l.eventId === e.eventId)) expect(e.decision).toBe('DENY');
      }
    }
  });

  it('reads each footer once while the tier keeps a footer cache', async () => {
    const days = Array.from({ length: 3 }, (_, d) => Array.from({ length: 100 }, (_, i) => ev(d * 1000 + i, T0 + d * DAY + i)));
    const cached = tier('s3://a/b', days, new ParquetFooterCache(10));
    const count = () => cached.sources.reduce((s, x) => s + x.fetchCount, 0);
    const first = await mergedSearch({ local: local([]), tiers: [cached], filter: filter({ limit: 1000 }), localCompleteFromMs: undefined });
    const firstFetches = count();
    const second = await mergedSearch({ local: local([]), tiers: [cached], filter: filter({ limit: 1000 }), localCompleteFromMs: undefined });
    expect(second.events).toEqual(first.events);
    expect(cached.footers!.size).toBe(3);
    // The same reads minus one footer fetch per file.
    expect(count() - firstFetches).toBe(firstFetches - 3);
  });

  it('names a tier it cannot read in tierNote and answers from the rest', async () => {
    const broken: TierSource = { name: 's3://gone/audit', listFiles: async () => { throw new Error('NoSuchBucket'); }, open: async () => { throw new Error('unreachable'); } };
    const ok = tier('s3://a/b', [[ev(1, T0)]]);
    const result = await mergedSearch({ local: local([ev(2, T0 + 5)]), tiers: [broken, ok], filter: filter(), localCompleteFromMs: undefined });
    expect(result.events.map((e) => e.eventId)).toEqual(['e2', 'e1']);
    expect(result.tierNote).toBe('tiered audit partly unavailable: s3://gone/audit: NoSuchBucket');
  });

  it('reads the tiers again when a listed file is gone before it was read and a new listing no longer names it (a rewrite replaced it); a file lost for good is named at once', async () => {
    const days = [Array.from({ length: 20 }, (_, i) => ev(i, T0 + i * 1000)), Array.from({ length: 20 }, (_, i) => ev(20 + i, T0 + DAY + i * 1000))];
    const current = tier('s3://a/b', days);
    const gone = (key: string) => new AuditError(AuditErrorCode.OBJECT_NOT_FOUND, `s3://a/b/${key} does not exist (GET)`);
    // The first listing names the newer day's old file, which an erasure's rewrite then replaced.
    const rewritten = (listingsStale: number): TierSource & { listings: number } => {
      const source = {
        name: 's3://a/b',
        listings: 0,
        listFiles: async () => {
          const files = await current.listFiles();
          return source.listings++ < listingsStale ? files.map((file) => (file.key === 'f1' ? { ...file, key: 'f1-old' } : file)) : files;
        },
        // Its footer's ranged read finds it gone, as the S3 byte source does.
        open: async (file: TierFile) => (file.key === 'f1-old' ? { byteLength: 4096, slice: () => Promise.reject(gone(file.key)) } : current.open(file)),
      };
      return source;
    };
    const once = rewritten(1);
    const result = await mergedSearch({ local: local([]), tiers: [once], filter: filter({ limit: 100 }), localCompleteFromMs: undefined });
    expect(result.events).toHaveLength(40);
    expect(result.tierNote).toBeUndefined();
    // The read, the listing that shows the file replaced, the read again.
    expect(once.listings).toBe(3);
    // Still listed, and gone: reading again cannot help, so it is named for what it is.
    const always = rewritten(Number.POSITIVE_INFINITY);
    const stuck = await mergedSearch({ local: local([]), tiers: [always], filter: filter({ limit: 100 }), localCompleteFromMs: undefined });
    expect(always.listings).toBe(2);
    expect(stuck.events).toHaveLength(0);
    expect(stuck.tierNote).toBe('tiered audit partly unavailable: s3://a/b: s3://a/b/f1-old does not exist (GET)');
    // Replaced at every listing (a rewrite each time): three reads in all, then named.
    let listings = 0;
    const churning: TierSource = {
      name: 's3://a/b',
      listFiles: async () => (await current.listFiles()).map((file) => (file.key === 'f1' ? { ...file, key: `f1-v${listings++}` } : file)),
      open: async (file: TierFile) => (file.key.startsWith('f1-v') ? { byteLength: 4096, slice: () => Promise.reject(gone(file.key)) } : current.open(file)),
    };
    const churned = await mergedSearch({ local: local([]), tiers: [churning], filter: filter({ limit: 100 }), localCompleteFromMs: undefined });
    expect(listings).toBe(5);
    expect(churned.tierNote).toContain('does not exist (GET)');
  });

  it('asks for the tier locations and the bound above which all is local only once the local page is read: an event pruned meanwhile is in one of the two', async () => {
    const order: string[] = [];
    async function* localRead() {
      order.push('local read');
      yield* local([ev(2, T0 + 5)]);
    }
    const tiers = async () => {
      order.push('locations read');
      return [tier('s3://a/b', [[ev(1, T0)]])];
    };
    const localCompleteFromMs = () => {
      order.push('bound read');
      return undefined;
    };
    const result = await mergedSearch({ local: localRead(), tiers, filter: filter(), localCompleteFromMs });
    expect(order).toEqual(['local read', 'locations read', 'bound read']);
    expect(result.events.map((e) => e.eventId)).toEqual(['e2', 'e1']);
  });
});
