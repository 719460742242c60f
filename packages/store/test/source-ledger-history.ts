// Seeded random histories for the completeness ledger's fuzz tests: thousands of sources over
// many days of events — a crowd that fills the ledger past the retirement threshold, sources
// that skip sourceSeqs until the shared ranges are all taken, steady senders, retired sources
// that return, bursts of new sources past LEDGER_SOURCES_MAX, calendar days without events,
// a clock a year ahead, events without a sourceSeq and sampled-out ones.
import { MODEL_DAY_MS, type ModelEvent } from './source-ledger-model.js';

/** A seeded generator of floats in [0, 1) (mulberry32): a failing seed replays. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Events one leader append group ordered (one ingestTs), or sampled out (none). */
export interface HistoryGroup {
  ingestTs: number | undefined;
  events: ModelEvent[];
}

export interface HistoryOptions {
  /** Sources of the crowd on day 0 (9,000 or more reaches the threshold). */
  crowd: number;
  /** Sources that skip every other sourceSeq, and sourceSeqs each sends (1,000 fills a source). */
  skippers: number;
  skipperSeqs: number;
  /** Calendar days after day 0 the history runs over. */
  days: number;
  /** Whether to add sampled-out groups (the ledger test does; a log does not carry them). */
  sampled: boolean;
}

/** sourceIds a key layout could mistake: the ledger's key suffixes inside them. */
const AWKWARD_IDS = ['a!t', 'a', 'b!j', 'c!0000000000000001', 'd!t!t', 'ü-é', 'x"y', ''];

export function randomHistory(random: () => number, options: HistoryOptions): HistoryGroup[] {
  const int = (n: number) => Math.floor(random() * n);
  const groups: HistoryGroup[] = [];
  const next = new Map<string, number>();
  /** The next sourceSeq of a source, usually the one after its last, sometimes not. */
  const seqOf = (sourceId: string): number => {
    const last = next.get(sourceId) ?? int(3);
    const roll = random();
    const seq = roll < 0.7 ? last : roll < 0.85 ? last + 1 + int(5) : roll < 0.93 ? Math.max(0, last - 1 - int(10)) : int(last + 1);
    next.set(sourceId, Math.max(last, seq + 1));
    return seq;
  };
  const event = (sourceId: string, ingestTs: number | undefined, seq = seqOf(sourceId)): ModelEvent => ({ sourceId, sourceSeq: random() < 0.01 ? undefined : seq, ingestTs });
  let epoch = Date.UTC(2026, 0, 1);
  const at = (day: number) => epoch + day * MODEL_DAY_MS + int(MODEL_DAY_MS);
  const pad = (i: number) => String(i).padStart(6, '0');

  // Day 0: the crowd, in groups of up to 1,500; some of it with a hole or two.
  const crowd = Array.from({ length: options.crowd }, (_, i) => `crowd-${pad(i)}`);
  for (let from = 0; from < crowd.length; from += 1 + int(1_500)) {
    const ingestTs = epoch + from;
    groups.push({ ingestTs, events: crowd.slice(from, from + 1_500).flatMap((id) => (random() < 0.05 ? [event(id, ingestTs, 1), event(id, ingestTs, 3 + int(3))] : [event(id, ingestTs, 1)])) });
  }
  // Days 0 to 4: the skippers, sourceSeqs 0, 2, 4, … interleaved.
  const skippers = Array.from({ length: options.skippers }, (_, i) => `skip-${pad(i)}`);
  const perDay = Math.ceil(options.skipperSeqs / 5);
  for (let day = 0; day < 5; day++) {
    for (let round = day * perDay; round < Math.min(options.skipperSeqs, (day + 1) * perDay); round += 40) {
      const ingestTs = day === 0 ? epoch + options.crowd + round : epoch + day * MODEL_DAY_MS + round;
      const events: ModelEvent[] = [];
      for (let i = round; i < Math.min(options.skipperSeqs, round + 40); i++) for (const id of skippers) events.push({ sourceId: id, sourceSeq: 2 * i, ingestTs });
      groups.push({ ingestTs, events });
    }
  }

  const steady = Array.from({ length: 40 }, (_, i) => `steady-${pad(i)}`);
  let lateSkippers: string[] = [];
  let fresh = 0;
  let day = 5;
  // Sleepers send on one day of events and next exactly 30, 31 or 32 days of events later, as
  // the first event of that day: the event that looks for idle sources is then their own.
  // Days of events are counted as the ledger counts them (a calendar day with ordered events).
  let dayNumber = 4;
  let lastDay = day - 1;
  const wakeAt = new Map<number, string[]>();
  let sleepers = 0;
  /** Ingest time never goes back. */
  let latest = 0;
  for (let tick = 0; tick < options.days; tick++) {
    const roll = random();
    // Mostly the next calendar day; some days have no events; a tick may stay on the same day;
    // once in a while the clock jumps a year ahead (ingest time follows it).
    if (roll < 0.03) epoch += 365 * MODEL_DAY_MS;
    else if (roll < 0.13) day += 0;
    else if (roll < 0.25) day += 2 + int(6);
    else day += 1;
    const groupCount = 1 + int(4);
    let ingestTs = Math.max(latest, at(day));
    const opens = day > lastDay || roll < 0.03;
    if (opens) dayNumber++;
    lastDay = day;
    const waking = opens ? (wakeAt.get(dayNumber) ?? []) : [];
    const sleeping: string[] = [];
    if (opens) for (let i = 1 + int(3); i > 0; i--) sleeping.push(`sleeper-${pad(sleepers++)}`);
    for (const id of sleeping) {
      const later = dayNumber + 30 + int(3);
      wakeAt.set(later, [...(wakeAt.get(later) ?? []), id]);
    }
    for (let g = 0; g < groupCount; g++) {
      ingestTs = Math.min(ingestTs + int(3_600_000), epoch + (day + 1) * MODEL_DAY_MS - 1);
      const events: ModelEvent[] = [];
      for (const id of steady) if (random() < 0.6) events.push(event(id, ingestTs));
      for (let i = int(30); i > 0; i--) events.push(event(crowd[int(crowd.length)] as string, ingestTs));
      if (skippers.length > 0) for (let i = int(10); i > 0; i--) events.push(event(skippers[int(skippers.length)] as string, ingestTs));
      // New sources: mostly a few, sometimes a burst that passes LEDGER_SOURCES_MAX.
      const born = random() < 0.08 ? 300 + int(1_500) : int(20);
      for (let i = 0; i < born; i++) events.push(event(`new-${pad(fresh++)}`, ingestTs));
      for (let i = int(5); i > 0; i--) events.push(event(`new-${pad(int(fresh + 1))}`, ingestTs));
      if (random() < 0.3) events.push(event(AWKWARD_IDS[int(AWKWARD_IDS.length)] as string, ingestTs));
      // A second wave of skippers once the first may be gone: they take the freed shared ranges.
      if (tick > options.days / 2 && lateSkippers.length === 0 && options.skippers > 0) lateSkippers = Array.from({ length: Math.ceil(options.skippers / 3) }, (_, i) => `late-${pad(i)}`);
      for (const id of lateSkippers) for (let i = int(40); i > 0; i--) events.push({ sourceId: id, sourceSeq: (next.get(id) ?? 0) + 2 * i, ingestTs });
      for (const id of lateSkippers) next.set(id, (next.get(id) ?? 0) + 100);
      // Shuffled: a group holds its sources in any order.
      for (let i = events.length - 1; i > 0; i--) {
        const j = int(i + 1);
        [events[i], events[j]] = [events[j] as ModelEvent, events[i] as ModelEvent];
      }
      if (g === 0) events.unshift(...[...waking, ...sleeping].map((id) => ({ sourceId: id, sourceSeq: seqOf(id), ingestTs })));
      groups.push({ ingestTs, events });
      latest = ingestTs;
      if (options.sampled && random() < 0.1) {
        groups.push({ ingestTs: undefined, events: Array.from({ length: 1 + int(5) }, () => event(random() < 0.5 ? (crowd[int(crowd.length)] as string) : `sampled-${pad(int(100))}`, undefined)) });
      }
    }
  }
  return groups;
}

/** The stored JSON of an event as the ledger reads it (sourceId and sourceSeq after other members). */
export function ledgerJson(event: ModelEvent, eventId: string): string {
  const seq = event.sourceSeq === undefined ? '' : `,"sourceSeq":${event.sourceSeq}`;
  return `{"eventId":${JSON.stringify(eventId)},"sourceId":${JSON.stringify(event.sourceId)}${seq}}`;
}
