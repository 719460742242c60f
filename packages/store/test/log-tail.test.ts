// Goal: the log tail answers a pull with exactly the entries the log holds, or not at all, and a
// store serves the same bytes from it as from LevelDB, also after the log's end moves otherwise.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { encodeErasureDetails, ERASED_MARKER, INTEGRITY_ACTIONS } from '@auditlake/integrity';
import { SELF_SOURCE, type AuditEvent, type StoredEvent } from '@auditlake/model';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { AuditStore, LOG_TAIL_BYTES } from '../src/index.js';
import { LogTail } from '../src/log-tail.js';

const text = (entries: Uint8Array[] | undefined) => entries?.map((e) => Buffer.from(e).toString('utf8'));

describe('LogTail', () => {
  it('property: a read returns the entries after the seq, up to the limit, as appended, or undefined when it does not hold the next one', () => {
    // Appends continue the run or jump (a jump clears it); a small byte limit evicts old groups.
    const step = fc.oneof(
      fc.record({ kind: fc.constant('append' as const), jump: fc.boolean(), jsons: fc.array(fc.string({ unit: 'grapheme', maxLength: 12 }), { maxLength: 6 }) }),
      fc.record({ kind: fc.constant('read' as const), back: fc.nat({ max: 40 }), limit: fc.integer({ min: 1, max: 10 }) }),
      fc.constant({ kind: 'clear' as const }),
      fc.record({ kind: fc.constant('drop' as const), back: fc.nat({ max: 40 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), fc.integer({ min: 1, max: 200 }), (steps, maxBytes) => {
        const tail = new LogTail(maxBytes);
        // Everything appended since the run last started: what a read may return.
        let run = new Map<number, string>();
        let next = 1;
        let newestGroupStart = 0;
        // The highest seq dropped (dropThrough) in this run: no read from at or below it is answered.
        let droppedThrough = 0;
        for (const s of steps) {
          if (s.kind === 'append') {
            // Nothing written (a metadata-only batch) leaves the log's end, and the tail, as they were.
            if (s.jsons.length === 0) {
              tail.append(next + (s.jump ? 5 : 0), LogTail.encode(s.jsons));
              continue;
            }
            if (s.jump) next += 5;
            if (s.jump || run.size === 0) {
              run = new Map();
              droppedThrough = 0;
            }
            newestGroupStart = next;
            tail.append(next, LogTail.encode(s.jsons));
            for (const json of s.jsons) run.set(next++, json);
          } else if (s.kind === 'clear') {
            tail.clear();
            run = new Map();
            droppedThrough = 0;
          } else if (s.kind === 'drop') {
            const through = Math.max(0, next - 1 - s.back);
            tail.dropThrough(through);
            droppedThrough = Math.max(droppedThrough, through);
          } else {
            const after = Math.max(0, next - 1 - s.back);
            const got = text(tail.read(after, s.limit));
            const expected: string[] = [];
            for (let seq = after + 1; seq < next && expected.length < s.limit && run.has(seq); seq++) expected.push(run.get(seq) as string);
            if (got !== undefined) expect(got).toEqual(expected);
            if (after + 1 <= droppedThrough && run.has(after + 1)) expect(got).toBeUndefined();
            // The newest group is always kept, whatever the byte limit, unless a drop reached into it.
            if (run.size > 0 && after + 1 >= newestGroupStart && droppedThrough < newestGroupStart) expect(got).toEqual(expected);
            if (run.size === 0) expect(got).toBeUndefined();
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('keeps nothing when its limit is 0 (a node nobody pulls from)', () => {
    const tail = new LogTail(0);
    tail.append(1, LogTail.encode(['{"a":1}']));
    expect(tail.enabled).toBe(false);
    expect(tail.read(0, 10)).toBeUndefined();
  });

  it('keeps the bytes of multi-byte characters exactly', () => {
    const tail = new LogTail(1024);
    tail.append(7, LogTail.encode(['{"q":"é"}', '{"q":"日本"}', '{"q":"😀"}']));
    expect(text(tail.read(6, 10))).toEqual(['{"q":"é"}', '{"q":"日本"}', '{"q":"😀"}']);
    expect(text(tail.read(8, 1))).toEqual(['{"q":"😀"}']);
    // Entries of a group lie one newline apart in one buffer: a pull answer sends them as one slice.
    const [a, b] = tail.read(6, 2) as [Uint8Array, Uint8Array];
    expect(b.buffer).toBe(a.buffer);
    expect(b.byteOffset).toBe(a.byteOffset + a.byteLength + 1);
    expect(new Uint8Array(a.buffer)[a.byteOffset + a.byteLength]).toBe(0x0a);
    expect(tail.read(9, 10)).toEqual([]);
    expect(tail.read(5, 10)).toBeUndefined();
  });
});

describe('LogTail memory', () => {
  it('gives each group a buffer of its own, never a slice of the shared pool that would keep a whole slab alive', () => {
    const group = LogTail.encode(['x']);
    expect(group.bytes.length).toBe(2);
    expect(group.bytes.buffer.byteLength).toBe(2);
  });

  it('resizes: keeps the newest groups that fit, none at 0 (and is then off), and fills again from the next append', () => {
    // Each group counts 512 bytes besides its entries' (its buffers and objects).
    const tail = new LogTail(2_000);
    tail.append(1, LogTail.encode(['a'.repeat(20), 'b'.repeat(20)]));
    tail.append(3, LogTail.encode(['c'.repeat(20)]));
    expect(text(tail.read(0, 10))).toHaveLength(3);
    expect(tail.bytes).toBe(42 + 512 + 21 + 512);
    tail.resize(600);
    expect(tail.read(0, 10)).toBeUndefined();
    expect(text(tail.read(2, 10))).toEqual(['c'.repeat(20)]);
    expect(tail.bytes).toBe(21 + 512);
    tail.resize(0);
    expect(tail.enabled).toBe(false);
    expect(tail.bytes).toBe(0);
    expect(tail.read(2, 10)).toBeUndefined();
    tail.append(4, LogTail.encode(['d']));
    expect(tail.bytes).toBe(0);
    tail.resize(100);
    tail.append(5, LogTail.encode(['e']));
    expect(text(tail.read(4, 10))).toEqual(['e']);
    expect(tail.read(3, 10)).toBeUndefined();
  });
});

async function openStore(): Promise<AuditStore> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-tail-'));
  const store = await AuditStore.open({ location: join(dir, 'store'), logTailBytes: LOG_TAIL_BYTES });
  onTestFinished(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return store;
}

function ev(eventId: string, timestamp: number): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: `SELECT '${eventId}' -- ü`, details: '', timestamp };
}

/** What LevelDB holds after `after`: read by a second store that applied the same log (it keeps no tail). */
async function fromLevelDb(store: AuditStore, after: number, limit: number): Promise<string[] | undefined> {
  const copy = await openStore();
  await copy.applyReplicated(await store.readEncodedBySeq(0, 1_000));
  return text(await copy.readEncodedBySeq(after, limit));
}

describe('AuditStore pulls from the log tail', () => {
  it('serves the bytes LevelDB holds, for every position and limit', async () => {
    const store = await openStore();
    await store.append([ev('a', 5), ev('b', 1), ev('c', 9)]);
    await store.append([ev('d', 2)]);
    await store.append([ev('e', 7), ev('f', 3)]);
    const read = vi.spyOn(LogTail.prototype, 'read');
    onTestFinished(() => read.mockRestore());
    expect(await store.readEncodedBySeq(2, 10)).toHaveLength(4);
    // Answered from the tail, not from LevelDB.
    expect(read.mock.results.at(-1)?.value).toHaveLength(4);
    for (let after = 0; after <= 6; after++) {
      for (const limit of [1, 2, 10]) expect(text(await store.readEncodedBySeq(after, limit)), `after ${after} limit ${limit}`).toEqual(await fromLevelDb(store, after, limit));
    }
  });

  it('serves entries replicated after ones it appended itself (a leader that became a standby)', async () => {
    const leader = await openStore();
    const former = await openStore();
    // The former leader ordered x, y, z; the new leader has them (one chain) and goes on.
    await former.append([ev('x', 1), ev('y', 2), ev('z', 3)]);
    await leader.applyReplicated(await former.readEncodedBySeq(0, 10));
    await leader.append([ev('d', 4), ev('e', 5)]);
    expect(await former.applyReplicated(await leader.readEncodedBySeq(3, 10))).toBe(2);
    expect(text(await former.readEncodedBySeq(3, 10))).toEqual(text(await leader.readEncodedBySeq(3, 10)));
  });

  it('keeps serving the newest entries across a prune of older ones, and is untouched by a prune that deletes nothing', async () => {
    const store = await openStore();
    await store.append([ev('old', 1_000)]);
    await store.append(Array.from({ length: 20 }, (_, i) => ev(`new${i}`, 50_000 + i)));
    const held = store.logTailHeldBytes;
    expect(held).toBeGreaterThan(0);
    // Deletes nothing (before every event time, or nothing at or below maxSeq): the tail stays whole.
    expect((await store.pruneBefore(500, 10, async () => true)).deleted).toBe(0);
    expect((await store.pruneBefore(10_000, 10, async () => true, 0)).deleted).toBe(0);
    expect(store.logTailHeldBytes).toBe(held);
    // Deletes seq 1 only: the group holding it goes, the newest group stays and is read from the tail.
    expect((await store.pruneBefore(10_000, 10, async () => true)).deleted).toBe(1);
    expect(store.logTailHeldBytes).toBeGreaterThan(0);
    const read = vi.spyOn(LogTail.prototype, 'read');
    onTestFinished(() => read.mockRestore());
    expect(text(await store.readEncodedBySeq(15, 10))?.map((e) => (JSON.parse(e) as AuditEvent).eventId)).toEqual(['new14', 'new15', 'new16', 'new17', 'new18', 'new19']);
    expect(read.mock.results.at(-1)?.value).toHaveLength(6);
    expect(text(await store.readEncodedBySeq(0, 30))).toEqual(await fromLevelDb(store, 0, 30));
  });

  it('does not serve entries a prune or a truncation removed, and serves what is appended after them', async () => {
    const store = await openStore();
    const ids = async (after: number) => text(await store.readEncodedBySeq(after, 10))?.map((e) => (JSON.parse(e) as AuditEvent).eventId);
    await store.append([ev('old1', 1_000), ev('keep', 50_000), ev('old2', 2_000)]);
    expect((await store.pruneBefore(10_000, 10, async () => true)).deleted).toBe(2);
    expect(await ids(0)).toEqual(['keep']);
    await store.append([ev('new', 70_000)]);
    await store.append([ev('moved', 60_000)]);
    expect((await store.divertSuffixToOutbox(5)).moved).toBe(1);
    expect(await ids(3)).toEqual(['new']);
    await store.append([ev('newer', 80_000)]);
    expect(await ids(3)).toEqual(['new', 'newer']);
    expect(await ids(0)).toEqual(['keep', 'new', 'newer']);
    expect(text(await store.readEncodedBySeq(3, 10))).toEqual(await fromLevelDb(store, 3, 10));
  });
});

describe('AuditStore serves the sweep from the log tail', () => {
  /** readBySeq of a second store that applied the same log (no tail: LevelDB answers). */
  async function sweepReadFromLevelDb(store: AuditStore, after: number, limit: number): Promise<StoredEvent[]> {
    const copy = await openStore();
    await copy.applyReplicated(await store.readEncodedBySeq(0, 1_000));
    return copy.readBySeq(after, limit);
  }

  it('reads the events LevelDB holds, from the tail, for every position and limit, and the erased copy after an erasure', async () => {
    const store = await openStore();
    await store.append([ev('a', 5), ev('b', 1), ev('c', 9)]);
    await store.append([ev('d', 2), ev('e', 7)]);
    const read = vi.spyOn(LogTail.prototype, 'read');
    onTestFinished(() => read.mockRestore());
    expect((await store.readBySeq(1, 10)).map((e) => e.eventId)).toEqual(['b', 'c', 'd', 'e']);
    // Answered from the tail, not from LevelDB.
    expect(read.mock.results.at(-1)?.value).toHaveLength(4);
    for (let after = 0; after <= 5; after++) {
      for (const limit of [1, 2, 10]) expect(await store.readBySeq(after, limit), `after ${after} limit ${limit}`).toEqual(await sweepReadFromLevelDb(store, after, limit));
    }
    // An erasure rewrites b in LevelDB: the sweep must never be handed the old value.
    const b = (await store.readBySeq(1, 1))[0] as StoredEvent;
    const details = encodeErasureDetails({ v: 1, fields: ['query'], records: [{ eventId: 'b', seq: b.seq }] });
    await store.append([{ ...ev('erase-b', 10), source: SELF_SOURCE, action: INTEGRITY_ACTIONS.erase, details }]);
    const after = await store.readBySeq(0, 10);
    expect(after.find((e) => e.eventId === 'b')?.query).toBe(ERASED_MARKER);
    expect(JSON.stringify(after)).not.toContain("SELECT 'b'");
    expect(after).toEqual(await sweepReadFromLevelDb(store, 0, 10));
    // Switched off and on again: LevelDB answers meanwhile, and the tail holds only what came after.
    store.setLogTailBytes(0);
    expect(store.logTailHeldBytes).toBe(0);
    await store.append([ev('g', 12)]);
    expect(await store.readBySeq(0, 10)).toEqual(await sweepReadFromLevelDb(store, 0, 10));
    store.setLogTailBytes(LOG_TAIL_BYTES);
    // Appends after that are served from the tail again.
    await store.append([ev('f', 11)]);
    expect((await store.readBySeq(7, 10)).map((e) => e.eventId)).toEqual(['f']);
    expect(read.mock.results.at(-1)?.value).toHaveLength(1);
    expect(await store.readBySeq(0, 10)).toEqual(await sweepReadFromLevelDb(store, 0, 10));
  });
});
