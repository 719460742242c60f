// Goal: paging newest to oldest with the keyset cursor returns every matching event exactly once, in order, while
// events keep arriving, move from the local store to a tier (and are pruned locally), and tier files are compacted.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesSource, encodeAuditParquet, type TieredEvent } from '@auditlake/format';
import { compileFilter, encodeCursor, inTimeRange, newestFirst, parseSearchParams, type AuditEvent, type SearchFilter, type StoredEvent } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { mergedSearch, type TierFile, type TierSource } from '../src/index.js';

const T0 = 1_790_000_000_000;
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

/** A tier whose committed files the test replaces at will (a commit, a compaction). */
class MovingTier implements TierSource {
  readonly name = 's3://test/tier';
  files: Array<{ file: TierFile; bytes: Uint8Array }> = [];
  #next = 0;

  add(events: readonly TieredEvent[], rowGroupSize: number): void {
    const key = `f${this.#next++}`;
    const bytes = encodeAuditParquet(events, { rowGroupSize });
    const timestamps = events.map((e) => e.timestamp);
    this.files.push({ file: { key, eventDate: '', rows: events.length, tsMin: Math.min(...timestamps), tsMax: Math.max(...timestamps), bytes: bytes.byteLength }, bytes });
  }

  async listFiles(): Promise<TierFile[]> {
    return this.files.map((f) => f.file);
  }

  async open(file: TierFile) {
    const found = this.files.find((f) => f.file.key === file.key);
    if (!found) throw new Error(`no such file ${file.key}`);
    return bytesSource(found.bytes);
  }
}

type Op =
  | { kind: 'ingest'; events: Array<{ slot: number; user: string; decision: 'ALLOW' | 'DENY' | '' }>; clockStepMs: number }
  | { kind: 'tier'; count: number; rowGroupSize: number }
  | { kind: 'prune'; slot: number }
  | { kind: 'compact'; rowGroupSize: number }
  | { kind: 'page'; limit: number };

/** Few event times and users, so ties in time and in ingest time are common. */
const slotMs = (slot: number) => T0 + slot * 1000;
const ingestOp: fc.Arbitrary<Op> = fc.record({
  kind: fc.constant('ingest' as const),
  events: fc.array(fc.record({ slot: fc.integer({ min: 0, max: 5 }), user: fc.constantFrom('ana', 'bo'), decision: fc.constantFrom('ALLOW' as const, 'DENY' as const, '' as const) }), { minLength: 1, maxLength: 6 }),
  clockStepMs: fc.constantFrom(0, 0, 1, 7),
});
const op: fc.Arbitrary<Op> = fc.oneof(
  ingestOp,
  fc.record({ kind: fc.constant('tier' as const), count: fc.integer({ min: 1, max: 20 }), rowGroupSize: fc.integer({ min: 1, max: 8 }) }),
  // Mostly a cutoff above every event time: all tiered events leave the store.
  fc.record({ kind: fc.constant('prune' as const), slot: fc.oneof(fc.constant(6), fc.integer({ min: 0, max: 6 })) }),
  fc.record({ kind: fc.constant('compact' as const), rowGroupSize: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('page' as const), limit: fc.integer({ min: 1, max: 4 }) }),
);
const filterParams = fc.constantFrom<Record<string, string>>({}, { user: 'ana' }, { decision: 'DENY' }, { decision: 'none' }, { from: String(slotMs(2)) }, { to: String(slotMs(3)) }, { q: 'bo', to: String(slotMs(4)) });

interface World {
  store: AuditStore;
  tier: MovingTier;
  clockMs: number;
  /** Seq of the last event moved to the tier. */
  tieredSeq: number;
  localCompleteFromMs: number | undefined;
  all: Map<string, StoredEvent>;
  nextId: number;
}

async function apply(world: World, o: Exclude<Op, { kind: 'page' }>): Promise<void> {
  if (o.kind === 'ingest') {
    world.clockMs += o.clockStepMs;
    const events: AuditEvent[] = o.events.map((e) => ({
      // Ids in no particular relation to time or seq, so the eventId tie-break matters.
      eventId: `id-${(world.nextId++ * 7919) % 1000}-${world.nextId}`,
      userId: e.user,
      source: 'trino',
      action: 'data:Select',
      resource: '',
      decision: e.decision,
      tables: ['t'],
      query: '',
      details: '',
      timestamp: slotMs(e.slot),
    }));
    const result = await world.store.append(events);
    for (const stored of result.stored) world.all.set(stored.eventId, (await world.store.getByEventId(stored.eventId))!);
  } else if (o.kind === 'tier') {
    const batch = await world.store.readBySeq(world.tieredSeq, o.count);
    if (batch.length === 0) return;
    world.tier.add(batch, o.rowGroupSize);
    world.tieredSeq = batch.at(-1)!.seq;
  } else if (o.kind === 'prune') {
    // Only tiered events are deleted, as the node's cleanup policy does.
    const cutoffMs = slotMs(o.slot);
    await world.store.pruneBefore(cutoffMs, 3, async () => true, world.tieredSeq);
    world.localCompleteFromMs = Math.max(world.localCompleteFromMs ?? 0, cutoffMs);
  } else {
    // Compaction: every tiered event rewritten into one new file replacing all others.
    const byId = new Map<string, TieredEvent>();
    for (const { file } of world.tier.files) {
      const { AuditParquetFile } = await import('@auditlake/format');
      const parquet = await AuditParquetFile.open(await world.tier.open(file));
      for (const e of await parquet.read({})) byId.set(e.eventId, e);
    }
    world.tier.files = [];
    if (byId.size > 0) world.tier.add([...byId.values()], o.rowGroupSize);
  }
}

async function page(world: World, filter: SearchFilter) {
  return mergedSearch({ local: world.store.search(filter), tiers: [world.tier], filter, localCompleteFromMs: world.localCompleteFromMs });
}

describe('keyset cursor', () => {
  it('never skips or repeats an event across random interleavings of ingest, tiering, pruning, compaction and paging', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), fc.array(op, { maxLength: 25 }), filterParams, fc.integer({ min: 1, max: 5 }), async (before, during, params, finalLimit) => {
        const dir = await mkdtemp(join(tmpdir(), 'auditlake-cursor-'));
        dirs.push(dir);
        const world: World = { store: undefined as unknown as AuditStore, tier: new MovingTier(), clockMs: T0 + 60_000, tieredSeq: 0, localCompleteFromMs: undefined, all: new Map(), nextId: 0 };
        world.store = await AuditStore.open({ location: dir, now: () => world.clockMs });
        try {
          for (const o of before) if (o.kind !== 'page') await apply(world, o);
          const base = parseSearchParams(params, 5000);
          const matches = compileFilter(base);
          const expected = [...world.all.values()].filter((e) => matches(e) && inTimeRange(base, e.timestamp)).map((e) => e.eventId);

          const returned: StoredEvent[] = [];
          let cursor: string | undefined;
          let done = false;
          const nextPage = async (limit: number) => {
            const filter = parseSearchParams({ ...params, limit: String(limit), ...(cursor ? { cursor } : {}) }, 5000);
            const result = await page(world, filter);
            expect(result.tierNote).toBeUndefined();
            returned.push(...(result.events as StoredEvent[]));
            const last = result.events.at(-1);
            if (result.truncated) cursor = encodeCursor(last!);
            else done = true;
          };
          for (const o of during) {
            if (o.kind === 'page') {
              if (!done) await nextPage(o.limit);
            } else await apply(world, o);
          }
          for (let pages = 0; !done; pages++) {
            expect(pages).toBeLessThan(1000);
            await nextPage(finalLimit);
          }

          const ids = returned.map((e) => e.eventId);
          // Strictly newest first across all pages: nothing repeated, nothing out of order.
          for (let i = 1; i < returned.length; i++) expect(newestFirst(returned[i - 1]!, returned[i]!)).toBeLessThan(0);
          // Everything that matched when paging began was returned (later arrivals may be too).
          expect(expected.filter((id) => !ids.includes(id))).toEqual([]);
          for (const e of returned) expect(matches(e) && inTimeRange(base, e.timestamp)).toBe(true);
        } finally {
          await world.store.close();
        }
      }),
      {
        // CURSOR_RUNS searches longer; CURSOR_SEED and CURSOR_PATH replay a failure's report.
        numRuns: Number(process.env.CURSOR_RUNS ?? 150),
        ...(process.env.CURSOR_SEED ? { seed: Number(process.env.CURSOR_SEED) } : {}),
        ...(process.env.CURSOR_PATH ? { path: process.env.CURSOR_PATH } : {}),
        examples: [
          // Tiered rows at the cursor's own time must not stand in for the row group's newest.
          [[{ kind: 'ingest', events: [{ slot: 0, user: 'ana', decision: 'ALLOW' }, { slot: 1, user: 'ana', decision: 'ALLOW' }, { slot: 1, user: 'ana', decision: 'ALLOW' }], clockStepMs: 0 }, { kind: 'tier', count: 3, rowGroupSize: 1 }, { kind: 'prune', slot: 6 }, { kind: 'compact', rowGroupSize: 3 }], [], {}, 1],
          // Local events of one time come by seq, not in the cursor's order: the run is sorted first.
          [[{ kind: 'ingest', events: [{ slot: 0, user: 'ana', decision: 'ALLOW' }, { slot: 0, user: 'ana', decision: 'ALLOW' }], clockStepMs: 0 }], [{ kind: 'prune', slot: 0 }, { kind: 'ingest', events: [{ slot: 0, user: 'ana', decision: 'ALLOW' }], clockStepMs: 0 }], {}, 1],
          // A tiered event pruned locally, older than every local one, must still come after the local page.
          [[{ kind: 'ingest', events: [{ slot: 2, user: 'ana', decision: 'ALLOW' }], clockStepMs: 0 }, { kind: 'tier', count: 1, rowGroupSize: 1 }], [{ kind: 'ingest', events: [{ slot: 0, user: 'ana', decision: 'ALLOW' }, { slot: 1, user: 'ana', decision: 'ALLOW' }], clockStepMs: 0 }, { kind: 'prune', slot: 6 }, { kind: 'ingest', events: [{ slot: 0, user: 'ana', decision: 'ALLOW' }, { slot: 1, user: 'ana', decision: 'ALLOW' }, { slot: 3, user: 'ana', decision: 'ALLOW' }], clockStepMs: 0 }, { kind: 'tier', count: 5, rowGroupSize: 1 }], {}, 1],
        ],
      },
    );
  }, 120_000);
});
