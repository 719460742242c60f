// Goal: a standby whose log diverged from its leader's inside (or right after) a range its
// retention deleted converges with the leader's log: the cut leaves it a log whose chain hash
// at its end it knows, it takes the leader's entries from there (verified against that hash),
// its own entries the leader lacks go to the outbox, and `auditlake verify` finds its log whole.
// Each step is the call the cluster makes: the follower cuts at the seq after the common
// prefix (divertSuffixToOutbox) and applies what the leader's pull answer carries (its entries
// after the standby's end, its term boundaries, what its retention deleted among them).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChainVerifier, type VerifyReport } from '@auditlake/integrity';
import type { AuditEvent } from '@auditlake/model';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AuditStore } from '../src/index.js';

async function location(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-diverged-pruned-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'store');
}

/** A store whose sequencer stamps whatever `term.value` is. */
async function storeWithTerm(): Promise<{ store: AuditStore; term: { value: number } }> {
  const term = { value: 1 };
  const store = await AuditStore.open({ location: await location(), sequencer: () => term.value });
  onTestFinished(() => store.close());
  return { store, term };
}

const OLD = 1_000;
const NEW = 5_000;
/** Retention's cutoff: deletes the events timed OLD, keeps those timed NEW. */
const CUTOFF = 2_000;

function ev(eventId: string, timestamp = OLD): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Insert', resource: '', decision: '', tables: [], query: '', details: '', timestamp };
}

/** What one pull does once matched: the leader's entries after the standby's end, applied. */
async function pull(leader: AuditStore, standby: AuditStore): Promise<number> {
  const after = standby.position.lastSeq;
  // The leader's log matching (log-source.ts): the same term there and, both knowing it, the same chain hash.
  expect(leader.termAt(after)).toBe(standby.termAt(after));
  const [mine, theirs] = [await leader.chainHashAt(after), await standby.chainHashAt(after)];
  if (mine !== undefined && theirs !== undefined) expect(theirs, `chain hash at seq ${after}: the leader would answer mismatch`).toBe(mine);
  const entries = await leader.readEncodedBySeq(after, 1000);
  if (entries.length === 0) return 0;
  return standby.applyReplicated(entries, leader.termStarts(after), await leader.skippedByRetention(after, entries));
}

async function verify(store: AuditStore): Promise<VerifyReport> {
  const verifier = new ChainVerifier({ startSeq: 1, pruned: store.prunedRanges, head: { seq: store.chainHead.seq, chainHash: store.chainHead.chainHash, where: 'the head' } });
  for (const event of await store.readBySeq(0, 1_000_000)) verifier.add(event);
  return verifier.finish();
}

async function logOf(store: AuditStore): Promise<Array<[number, number, string]>> {
  return (await store.readBySeq(0, 1_000_000)).map((e) => [e.seq, e.term, e.eventId]);
}

/**
 * The reviewer's sequence (s10), in stores: L leads term 1 and orders 10 entries; B has the
 * first 3, A all 10. `timesOnA` are the 10 events' times: A's retention deletes those timed OLD
 * (tiered, in the real cluster). B then leads term 2 and orders 5 entries after seq 3; the
 * common prefix of A's and B's logs is seq 3 (their term boundaries differ at 4).
 */
async function divergedStandby(timesOnA: readonly number[]): Promise<{ a: AuditStore; b: AuditStore }> {
  const { store: l } = await storeWithTerm();
  const { store: a } = await storeWithTerm();
  const { store: b, term: bTerm } = await storeWithTerm();
  await l.append(timesOnA.map((time, i) => ev(`l${i + 1}`, time)));
  await b.applyReplicated(await l.readEncodedBySeq(0, 3), l.termStarts());
  await a.applyReplicated(await l.readEncodedBySeq(0, 10), l.termStarts());
  await a.pruneBefore(CUTOFF, 100, async () => true);
  bTerm.value = 2;
  await b.append([1, 2, 3, 4, 5].map((i) => ev(`b${i}`, NEW)));
  expect(b.termStarts()).toEqual([{ firstSeq: 1, term: 1 }, { firstSeq: 4, term: 2 }]);
  return { a, b };
}

describe('a standby whose log diverged inside a range its retention deleted', () => {
  it('cuts back to before the range (its chain hash at the cut is not known there), takes the leader\'s entries from there and verifies', async () => {
    // s10: A's retention deleted its whole log, seqs 1..10.
    const { a, b } = await divergedStandby(Array(10).fill(OLD));
    expect(a.prunedRanges).toEqual([{ fromSeq: 1, toSeq: 10, chainHash: expect.any(String) }]);
    const diverted = await a.divertSuffixToOutbox(4);
    while ((await pull(b, a)) > 0);
    expect(await logOf(a)).toEqual(await logOf(b));
    expect(a.chainHead).toEqual(b.chainHead);
    expect((await verify(a)).message).toBe('verified 8 records, seq 1..8, 0 checkpoints');
    // Nothing of its own to forward (all of it deleted, and in the tier); it kept no seq.
    expect(diverted).toEqual({ moved: 0, terms: {}, keptThrough: 0 });
  });

  it('keeps its entries up to the last one before the range, and moves its own entries past the common prefix to the outbox', async () => {
    // A keeps seq 1, and seqs 8..10 (L's, which B never got); its retention deleted 2..7.
    const { a, b } = await divergedStandby([NEW, OLD, OLD, OLD, OLD, OLD, OLD, NEW, NEW, NEW]);
    expect(a.prunedRanges).toEqual([{ fromSeq: 2, toSeq: 7, chainHash: expect.any(String) }]);
    const diverted = await a.divertSuffixToOutbox(4);
    expect((await a.readOutbox(10)).map((o) => (JSON.parse(o.json) as AuditEvent).eventId)).toEqual(['l8', 'l9', 'l10']);
    while ((await pull(b, a)) > 0);
    expect(await logOf(a)).toEqual(await logOf(b));
    expect((await verify(a)).message).toBe('verified 8 records, seq 1..8, 0 checkpoints');
    expect(diverted).toEqual({ moved: 3, terms: { 1: 3 }, keptThrough: 1 });
  });

  it('takes the range the leader\'s own retention deleted from the pull answer, with the chain hash at its end', async () => {
    const { a, b } = await divergedStandby(Array(10).fill(OLD));
    // B's retention deletes seqs 1..3 (L's, timed OLD) but not its own 4..8.
    await b.pruneBefore(CUTOFF, 100, async () => true);
    expect(b.prunedRanges).toEqual([{ fromSeq: 1, toSeq: 3, chainHash: expect.any(String) }]);
    await a.divertSuffixToOutbox(4);
    while ((await pull(b, a)) > 0);
    expect(await logOf(a)).toEqual(await logOf(b));
    expect(a.prunedRanges).toEqual(b.prunedRanges);
    expect(a.chainHead).toEqual(b.chainHead);
    expect((await verify(a)).message).toBe('verified 5 records, seq 4..8, 0 checkpoints; 3 records removed by retention');
  });

  it('right after the range: keeps the range and the chain hash at its end, and goes on from it', async () => {
    // A's retention deleted exactly the common prefix, seqs 1..3.
    const { a, b } = await divergedStandby([OLD, OLD, OLD, NEW, NEW, NEW, NEW, NEW, NEW, NEW]);
    const [range] = a.prunedRanges;
    expect(range).toEqual({ fromSeq: 1, toSeq: 3, chainHash: await b.chainHashAt(3) });
    expect(await a.divertSuffixToOutbox(4)).toEqual({ moved: 7, terms: { 1: 7 } });
    expect(a.prunedRanges).toEqual([range]);
    while ((await pull(b, a)) > 0);
    expect(await logOf(a)).toEqual((await logOf(b)).filter(([seq]) => seq > 3));
    expect(a.chainHead).toEqual(b.chainHead);
    expect((await verify(a)).message).toBe('verified 5 records, seq 4..8, 0 checkpoints; 3 records removed by retention');
  });
});
