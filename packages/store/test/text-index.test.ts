// Goal: a `q` search answered through the free-text sketches returns exactly what a scan of the time range returns (substring semantics unchanged), on a leader over many blocks, after retention, and on a standby that applied the same log; and the sketches rule out the blocks that cannot match.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileFilter, inTimeRange, seededRandom, upperTimeMs, type AuditEvent, type SearchFilter, type StoredEvent } from '@auditlake/model';
import fc from 'fast-check';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AuditStore } from '../src/index.js';
import { TEXT_BLOCK_SEQS, TextSketch, needleBitChoices, needleBits, sketchMayContainChoices } from '../src/text-sketch.js';

async function location(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-text-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'store');
}

async function collect(source: AsyncIterable<StoredEvent>): Promise<string[]> {
  const ids: string[] = [];
  for await (const event of source) ids.push(event.eventId);
  return ids;
}

/** The truth: every stored event (a time scan with no predicate), filtered here. */
async function fullScan(store: AuditStore, filter: Omit<SearchFilter, 'limit'>): Promise<string[]> {
  const matches = compileFilter({ ...filter, limit: 1 });
  const toMs = upperTimeMs(filter);
  const ids: string[] = [];
  for await (const event of store.search({ action: 'all' })) {
    if (inTimeRange({ ...filter, ...(toMs !== undefined ? { toMs } : {}), limit: 1 }, event.timestamp) && matches(event)) ids.push(event.eventId);
  }
  return ids;
}

/** Rare words, each in a few events somewhere in the log; mixed case, quotes and non-ASCII. */
const RARE = ['Zebra-42', 'quux"7', 'ÉCLAIR', 'needle\\path', 'x\ny', 'tbl_9'];

function events(count: number, random: () => number): AuditEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const rare = random() < 0.0006 ? (RARE[Math.floor(random() * RARE.length)] as string) : '';
    const where = Math.floor(random() * 4);
    return {
      eventId: `e${i}`,
      userId: where === 0 && rare ? `user-${rare}` : `u${i % 17}`,
      source: 'trino',
      action: 'data:Select',
      resource: where === 1 ? rare : '',
      decision: '',
      tables: where === 2 && rare ? [`db.${rare}`] : ['db.t'],
      query: `select ${i % 100} from db.t where c = ${i % 7}`,
      details: where === 3 ? `note ${rare}` : '',
      // Roughly in arrival order, a little late at times, as engines report.
      timestamp: 1_000_000 + i * 10 - Math.floor(random() * 500),
    };
  });
}


const qArb = fc.oneof(
  fc.constantFrom(...RARE.map((w) => w.toLowerCase())),
  fc.constantFrom('zebra', 'éclair', 'ux"7', 'e\\p', 'no-such-needle', 'select 42 from', 'user-', 'db.tbl_9', '\ny'),
);
const filterArb = fc.record(
  { q: qArb, fromMs: fc.integer({ min: 990_000, max: 1_200_000 }), span: fc.integer({ min: 0, max: 300_000 }), user: fc.constantFrom('u3', 'user-zebra-42') },
  { requiredKeys: ['q'] },
);

function toFilter(f: { q: string; fromMs?: number; span?: number; user?: string }): Omit<SearchFilter, 'limit'> {
  return {
    action: 'all',
    q: f.q,
    ...(f.fromMs !== undefined ? { fromMs: f.fromMs } : {}),
    ...(f.fromMs !== undefined && f.span !== undefined ? { toMs: f.fromMs + f.span } : {}),
    ...(f.user !== undefined ? { user: f.user } : {}),
  };
}

describe('free-text sketches', () => {
  it('property: q search = full scan over many blocks, after retention, and on a standby', async () => {
    const seed = Number(process.env['TEXT_SEED'] ?? Date.now() % 1_000_000);
    console.log(`text-index seed ${seed} (TEXT_SEED=${seed} replays it)`);
    const leader = await AuditStore.open({ location: await location() });
    onTestFinished(() => leader.close());
    const standby = await AuditStore.open({ location: await location() });
    onTestFinished(() => standby.close());
    const all = events(TEXT_BLOCK_SEQS * 4 + 123, seededRandom(seed));
    (all[9000] as AuditEvent).details = 'Only-Once-Marker';
    for (let i = 0; i < all.length; i += 5000) await leader.append(all.slice(i, i + 5000));
    for (let after = 0; after < leader.position.lastSeq; after += 3000) await standby.applyReplicated(await leader.readEncodedBySeq(after, 3000));

    const check = async (store: AuditStore) =>
      fc.assert(
        fc.asyncProperty(filterArb, async (f) => {
          const filter = toFilter(f);
          expect(await collect(store.search(filter)), JSON.stringify(filter)).toEqual(await fullScan(store, filter));
        }),
        { seed, numRuns: 15 },
      );
    await check(leader);
    await check(standby);
    // A word in one event is answered from the one block that may hold it.
    expect(await leader.searchPlan({ action: 'all', q: 'only-once-marker' })).toEqual(['text']);
    expect(await collect(leader.search({ action: 'all', q: 'only-once-marker' }))).toEqual(['e9000']);
    // A needle in no event is answered from the sketches alone.
    expect(await leader.searchPlan({ action: 'all', q: 'no-such-needle' })).toEqual(['text']);
    expect(await collect(leader.search({ action: 'all', q: 'no-such-needle' }))).toEqual([]);
    // One that every block holds is read in time order instead.
    expect(await leader.searchPlan({ action: 'all', q: 'select' })).toEqual([]);

    // Retention takes whole blocks' events (and then their sketches) and parts of others.
    await leader.pruneBefore(1_000_000 + TEXT_BLOCK_SEQS * 15, 1000, async () => true);
    await check(leader);
  });

  it('finds a capital sigma right after an escaped character as its value lower-cases it (σ, not the final ς)', async () => {
    const store = await AuditStore.open({ location: await location() });
    onTestFinished(() => store.close());
    const base = { userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '' as const, tables: [], query: '' };
    // Stored as JSON, each Σ follows an escape ending in a letter (\t, \n, \u001f) — or a plain space.
    const details = ['sum:\tΣ = 42', 'sum: Σ = 42', 'line1\nΣ', 'x\u001fΣΑ', 'ΟΔΟΣ', 'ok\tΣ'];
    await store.append(details.map((text, i) => ({ ...base, eventId: `s${i}`, details: text, timestamp: 1_000_000 + i })));
    for (const q of ['σ = 42', '\tσ = 42', 'σ', '\nσ', 'σα', 'οδος', 'ς', 'k\tσ', 'sum:']) {
      const filter = { action: 'all' as const, q };
      expect({ q, ids: await collect(store.search(filter)) }).toEqual({ q, ids: await fullScan(store, filter) });
    }
    // Not vacuous: the definition finds the first under σ, and whole-JSON lower-casing would not.
    expect(await fullScan(store, { action: 'all', q: 'σ = 42' })).toEqual(['s1', 's0']);
    expect(JSON.stringify('sum:\tΣ = 42').toLowerCase()).not.toContain('σ');
  });

  it('a needle with σ keeps the text index, and is found in a block whose sketch lower-cased a Σ after an escape to ς (as sketches did before)', async () => {
    // A sketch written the old way: the whole stored JSON lower-cased, so \tΣ became \tς.
    const json = JSON.stringify({ details: 'sum:\tΣ = 42' });
    const old = new TextSketch();
    old.add(1, json.toLowerCase());
    const needle = JSON.stringify('\tσ = 42').slice(1, -1);
    expect(old.mayContain(needleBits(needle))).toBe(false);
    expect(sketchMayContainChoices(old.value, needleBitChoices(needle))).toBe(true);
    // A block holding neither form is still ruled out.
    const other = new TextSketch();
    other.add(1, JSON.stringify({ details: 'nothing greek here' }).toLowerCase());
    expect(sketchMayContainChoices(other.value, needleBitChoices(needle))).toBe(false);
    // And a Greek needle is planned through the sketches, not by time.
    const store = await AuditStore.open({ location: await location() });
    onTestFinished(() => store.close());
    const base = { userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '' as const, tables: [], query: '' };
    for (let batch = 0; batch < 4; batch++) {
      await store.append(Array.from({ length: 5000 }, (_, i) => ({ ...base, eventId: `g${batch}-${i}`, details: `πελάτες ${i % 97}`, timestamp: 1_000_000 + batch * 5000 + i })));
    }
    await store.append([{ ...base, eventId: 'target', details: 'τα στοιχεία του πελάτη', timestamp: 2_000_000 }]);
    expect(await store.searchPlan({ action: 'all', q: 'στοιχεία' })).toEqual(['text']);
    expect(await collect(store.search({ action: 'all', q: 'στοιχεία' }))).toEqual(['target']);
  });

  it('rules out a block only when one of the needle\'s trigrams is missing from it', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme' }), { minLength: 1, maxLength: 20 }), fc.nat(), fc.nat(), (texts, pick, from) => {
        const sketch = new TextSketch();
        texts.forEach((t, i) => sketch.add(i, JSON.stringify(t).toLowerCase()));
        const text = JSON.stringify(texts[pick % texts.length]).toLowerCase();
        const start = from % Math.max(1, text.length);
        // Any substring of what was added passes.
        expect(sketch.mayContain(needleBits(text.slice(start, start + 8)))).toBe(true);
      }),
    );
    const sketch = new TextSketch();
    sketch.add(5, '{"query":"select 1"}');
    expect(sketch.mayContain(needleBits('zebra'))).toBe(false);
    expect(sketch.tsMinMs).toBe(5);
    expect(sketch.tsMaxMs).toBe(5);
  });
});
