// Goal: the free-text prefilter never says "no" for a row group holding a match (case-insensitive as toLowerCase, dictionary and plain columns, the non-ASCII characters that lower-case into ASCII) and does say "no" for groups without one, so skipping is real.
import { compileFilter, type StoredEvent } from '@auditlake/model';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AuditParquetFile } from '../src/audit-parquet-file.js';
import { bytesSource, countingSource } from '../src/byte-source.js';
import { isPrefilterNeedle, LOWERS_TO_ASCII_UTF8 } from '../src/column-text-probe.js';
import { encodeAuditParquet } from '../src/parquet-writer.js';

const TEXT_COLUMNS = ['query', 'details', 'resource', 'user_id', 'action', 'tables'] as const;
const T0 = Date.UTC(2026, 2, 1);

function ev(i: number, over: Partial<StoredEvent> = {}): StoredEvent {
  return { eventId: `e${i}`, userId: `user${i % 3}`, source: 'trino', action: 'data:Select', resource: 'hive.sales.orders', decision: 'ALLOW', tables: ['hive.sales.orders'], query: `SELECT id FROM t WHERE n = ${i}`, details: `queryId=${i}`, timestamp: T0 + i * 1000, ingestTs: T0 + i * 1000 + 1, seq: i + 1, term: 0, ...over };
}

/** For each row group: does any of its events match `q` exactly (compileFilter), and does the prefilter say maybe? */
async function perGroup(events: StoredEvent[], q: string, rowGroupSize: number) {
  const file = await AuditParquetFile.open(bytesSource(encodeAuditParquet(events, { rowGroupSize })));
  const matches = compileFilter({ action: 'all', limit: 1, q });
  const sorted = [...events].sort((a, b) => a.timestamp - b.timestamp);
  return Promise.all(
    file.rowGroups.map(async (g) => ({
      exact: sorted.slice(g.rowStart, g.rowEnd).some(matches),
      maybe: await file.rowGroupMayContainText(g.index, q, TEXT_COLUMNS),
    })),
  );
}

describe('column text prefilter', () => {
  it('lists exactly the non-ASCII characters whose lower case contains ASCII', () => {
    const found: string[] = [];
    for (let cp = 0x80; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const c = String.fromCodePoint(cp);
      if ([...c.toLowerCase()].some((x) => x.codePointAt(0)! < 0x80)) found.push(Buffer.from(c).toString('hex'));
    }
    expect(found.sort()).toEqual(LOWERS_TO_ASCII_UTF8.map((b) => Buffer.from(b).toString('hex')).sort());
  });

  it('finds a needle in any text column, in any case, and skips the groups without it', async () => {
    const events = Array.from({ length: 400 }, (_, i) => ev(i));
    events[10] = ev(10, { query: 'select * from HIVE.Secret.NEEDLEtable' }); // plain column, mixed case
    events[150] = ev(150, { userId: 'NeedleTable-owner' }); // dictionary-encoded column
    events[250] = ev(250, { tables: ['a.b', 'x.needletable'] });
    events[350] = ev(350, { details: 'client=NEEDLETABLE', resource: '' });
    const groups = await perGroup(events, 'needletable', 50);
    expect(groups.map((g) => g.exact)).toEqual([true, false, false, true, false, true, false, true]);
    expect(groups.map((g) => g.maybe)).toEqual(groups.map((g) => g.exact));
  });

  it('answers a dictionary-encoded column from its dictionary page', async () => {
    const events = Array.from({ length: 200 }, (_, i) => ev(i, { userId: i < 100 ? `svc-${i % 4}` : `Admin-${i % 4}` }));
    const file = await AuditParquetFile.open(bytesSource(encodeAuditParquet(events, { rowGroupSize: 100 })));
    const userChunk = file.footer.row_groups[0]!.columns.find((c) => c.meta_data?.path_in_schema[0] === 'user_id')!;
    expect(userChunk.meta_data!.encodings).toContain('RLE_DICTIONARY');
    expect(await file.rowGroupMayContainText(0, 'admin', ['user_id'])).toBe(false);
    expect(await file.rowGroupMayContainText(1, 'admin', ['user_id'])).toBe(true);
  });

  it('says maybe for U+212A and U+0130, which lower-case into ASCII', async () => {
    const events = Array.from({ length: 100 }, (_, i) => ev(i));
    events[5] = ev(5, { details: 'xx\u212Ayy' }); // toLowerCase → 'xxkyy'
    events[60] = ev(60, { query: 'D\u0130R' }); // toLowerCase → 'di̇r'
    expect(await perGroup(events, 'xkyy', 50)).toEqual([{ exact: true, maybe: true }, { exact: false, maybe: true }]);
    expect((await perGroup(events, 'di', 50))[1]).toEqual({ exact: true, maybe: true });
  });

  it('does not prefilter a needle that is not ASCII, or an empty one', async () => {
    expect(isPrefilterNeedle('héllo')).toBe(false);
    expect(isPrefilterNeedle('')).toBe(false);
    expect(isPrefilterNeedle('hello')).toBe(true);
    const events = Array.from({ length: 50 }, (_, i) => ev(i, { query: i === 3 ? 'HÉLLO' : 'x' }));
    const file = await AuditParquetFile.open(bytesSource(encodeAuditParquet(events)));
    expect(await file.rowGroupMayContainText(0, 'héllo', TEXT_COLUMNS)).toBe(true);
  });

  it('fetches the text columns of the group in one request', async () => {
    const events = Array.from({ length: 400 }, (_, i) => ev(i));
    const counting = countingSource(bytesSource(encodeAuditParquet(events, { rowGroupSize: 100 })));
    const file = await AuditParquetFile.open(counting);
    const before = counting.fetchCount;
    expect(await file.rowGroupMayContainText(2, 'nowhere', TEXT_COLUMNS)).toBe(false);
    expect(counting.fetchCount - before).toBe(1);
  });

  it('answers neighbouring groups from one request, each as it would alone', async () => {
    const events = Array.from({ length: 400 }, (_, i) => ev(i, i === 120 || i === 390 ? { details: 'Found-It' } : {}));
    const counting = countingSource(bytesSource(encodeAuditParquet(events, { rowGroupSize: 50 })));
    const file = await AuditParquetFile.open(counting);
    const alone = await Promise.all([7, 6, 5, 4, 3, 2].map((i) => file.rowGroupMayContainText(i, 'found-it', TEXT_COLUMNS)));
    expect(alone).toEqual([true, false, false, false, false, true]);
    const before = counting.fetchCount;
    expect(await file.rowGroupsMayContainText([7, 6, 5, 4, 3, 2], 'found-it', TEXT_COLUMNS)).toEqual(alone);
    expect(counting.fetchCount - before).toBe(1);
    expect(await file.rowGroupsMayContainText([], 'found-it', TEXT_COLUMNS)).toEqual([]);
  });

  it('never says no for a group with a match (property, mixed case and non-ASCII text)', async () => {
    const alphabet = fc.constantFrom('a', 'B', 'k', 'K', 'i', 'I', '\u212A', '\u0130', 'é', 'É', 'ß', 'σ', 'Σ', ' ', ',', '-', '7');
    const text = fc.string({ unit: alphabet, maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ query: text, details: text, user: fc.constantFrom('u1', 'U2', 'k\u212A'), tables: fc.array(text, { maxLength: 3 }) }), { minLength: 1, maxLength: 60 }),
        fc.string({ unit: fc.constantFrom('a', 'b', 'k', 'i', ' ', ',', '-', '7'), minLength: 1, maxLength: 3 }),
        async (rows, q) => {
          const events = rows.map((r, i) => ev(i, { query: r.query, details: r.details, userId: r.user, tables: r.tables, resource: r.tables[0] ?? '' }));
          for (const g of await perGroup(events, q, 7)) if (g.exact) expect(g.maybe).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });
});
