import { dayOf, type AuditStore, type DayLedgerRow, type SourceLedgerEntry } from '@auditlake/store';
import type { Acked } from './workload.js';

/** One log entry as the checks compare it. */
export interface LogEntry {
  seq: number;
  term: number;
  eventId: string;
  /** When the leader that ordered it stored it (checkIngestTimes). */
  ingestTs?: number;
  /** What the completeness ledger counts it by (checkLedger). */
  source?: string;
  timestamp?: number;
  sourceId?: string;
  sourceSeq?: number;
}

/** A node's completeness ledger: its sources' ranges and its day rows. */
export interface LedgerView {
  sources: readonly SourceLedgerEntry[];
  days: readonly DayLedgerRow[];
}

/** The whole log of a store, in seq order. */
export async function readLog(store: AuditStore): Promise<LogEntry[]> {
  const entries: LogEntry[] = [];
  let after = 0;
  for (;;) {
    const page = await store.readBySeq(after, 5000);
    if (page.length === 0) return entries;
    for (const event of page) {
      const bySource = event.sourceId === undefined ? {} : { sourceId: event.sourceId, ...(event.sourceSeq === undefined ? {} : { sourceSeq: event.sourceSeq }) };
      entries.push({ seq: event.seq, term: event.term, eventId: event.eventId, ingestTs: event.ingestTs, source: event.source, timestamp: event.timestamp, ...bySource });
    }
    after = (page[page.length - 1] as { seq: number }).seq;
  }
}

/**
 * Properties 1–3 on converged logs: every node holds exactly the same log, the same
 * (seq, term, eventId) at every position with each eventId once (2, which log matching, 3,
 * makes possible), and every acknowledged event is in it (1). `logs` maps node name to log.
 */
export function checkLogs(logs: ReadonlyMap<string, readonly LogEntry[]>, acked: Iterable<Acked>): string[] {
  const violations: string[] = [];
  const [first, ...rest] = [...logs];
  if (first === undefined) return ['no node to check'];
  const [firstName, reference] = first;
  for (const [name, log] of rest) {
    const length = Math.max(log.length, reference.length);
    for (let i = 0; i < length; i++) {
      const a = reference[i];
      const b = log[i];
      if (a?.seq !== b?.seq || a?.term !== b?.term || a?.eventId !== b?.eventId) {
        violations.push(`property 2: ${name}'s log differs from ${firstName}'s at position ${i + 1}: ${describe(b)} where ${firstName} has ${describe(a)} (lengths ${log.length} and ${reference.length})`);
        break;
      }
    }
  }
  const seen = new Map<string, number>();
  for (const entry of reference) {
    const before = seen.get(entry.eventId);
    if (before !== undefined) violations.push(`property 2: eventId ${entry.eventId} is in the log twice (seq ${before} and ${entry.seq})`);
    seen.set(entry.eventId, entry.seq);
  }
  for (let i = 1; i < reference.length; i++) {
    const previous = reference[i - 1] as LogEntry;
    const entry = reference[i] as LogEntry;
    if (entry.seq <= previous.seq || entry.term < previous.term) violations.push(`property 2: the log goes back at seq ${entry.seq} (term ${entry.term}) after seq ${previous.seq} (term ${previous.term})`);
  }
  const lost = [...acked].filter((a) => !seen.has(a.eventId));
  if (lost.length > 0) {
    const sample = lost.slice(0, 5).map((a) => `${a.eventId} (ack=${a.ack} by ${a.node} at ${a.atMs} ms)`);
    violations.push(`property 1: ${lost.length} acknowledged events are in no log: ${sample.join(', ')}`);
  }
  return violations;
}

function describe(entry: LogEntry | undefined): string {
  return entry === undefined ? 'nothing' : `seq ${entry.seq} term ${entry.term} ${entry.eventId}`;
}

/**
 * Property 5 on a converged node: its completeness ledger agrees with its log. Per day, source
 * id and engine, the events stored are the events its log holds, and received = stored +
 * pruned. Per source, on a node whose retention deleted nothing, the sourceSeqs received
 * (distinct), the first, the highest and every hole between them are its log's; once retention
 * deleted some, the log holds fewer than were received, so only received and highest are
 * bounded by it. The holes are real ones (requests a client gave up on), the same in every log,
 * so only a ledger that disagrees with its own log fails.
 */
export function checkLedger(name: string, log: readonly LogEntry[], ledger: LedgerView): string[] {
  const violations: string[] = [];
  const sourceSeqs = new Map<string, Set<number>>();
  const perDay = new Map<string, number>();
  for (const entry of log) {
    if (entry.sourceId !== undefined && entry.sourceSeq !== undefined) {
      const seqs = sourceSeqs.get(entry.sourceId) ?? new Set<number>();
      seqs.add(entry.sourceSeq);
      sourceSeqs.set(entry.sourceId, seqs);
    }
    if (entry.timestamp !== undefined && entry.source !== undefined) {
      const key = JSON.stringify([dayOf(entry.timestamp), entry.sourceId ?? null, entry.source]);
      perDay.set(key, (perDay.get(key) ?? 0) + 1);
    }
  }
  const rows = new Set<string>();
  for (const row of ledger.days) {
    const key = JSON.stringify([row.day, row.sourceId, row.source]);
    rows.add(key);
    const held = perDay.get(key) ?? 0;
    if (row.stored !== held || row.pruned < 0 || row.received !== row.stored + row.pruned) violations.push(`property 5: ${name}'s day row ${key} counts received ${row.received}, stored ${row.stored}, pruned ${row.pruned} where its log holds ${held}`);
  }
  for (const [key, held] of perDay) if (!rows.has(key)) violations.push(`property 5: ${name}'s log holds ${held} events of ${key}, which its day ledger has no row for`);
  const pruned = ledger.days.some((row) => row.pruned > 0);
  const listed = new Set<string>();
  for (const source of ledger.sources) {
    listed.add(source.sourceId);
    const expected = rangesOf([...(sourceSeqs.get(source.sourceId) ?? [])]);
    const actual = { received: source.received, first: source.firstSourceSeq, highest: source.highestSourceSeq, gaps: source.gapsTruncated ? `${source.gapCount} (truncated)` : JSON.stringify(source.gaps) };
    const agrees = pruned ? actual.received >= expected.received && actual.highest >= expected.highest : JSON.stringify(actual) === JSON.stringify(expected);
    if (!agrees) violations.push(`property 5: ${name}'s ledger has source ${source.sourceId} as ${JSON.stringify(actual)} where its log holds ${JSON.stringify(expected)}${pruned ? ' (retention deleted some)' : ''}`);
  }
  for (const sourceId of sourceSeqs.keys()) if (!listed.has(sourceId)) violations.push(`property 5: ${name}'s log holds sourceSeqs of ${sourceId}, which its ledger does not list`);
  return violations;
}

/** A source's ledger entry as its sourceSeqs give it. */
function rangesOf(seqs: number[]): { received: number; first: number; highest: number; gaps: string } {
  seqs.sort((a, b) => a - b);
  const gaps: Array<{ fromSeq: number; toSeq: number }> = [];
  for (let i = 1; i < seqs.length; i++) {
    const previous = seqs[i - 1] as number;
    const seq = seqs[i] as number;
    if (seq > previous + 1) gaps.push({ fromSeq: previous + 1, toSeq: seq - 1 });
  }
  return { received: seqs.length, first: seqs[0] ?? 0, highest: seqs[seqs.length - 1] ?? 0, gaps: JSON.stringify(gaps) };
}

/**
 * Property 6 on one node's log: ingest time never goes back along the log (invariant 3), across
 * leaders whose wall clocks differ and the failovers between them: the sweep's watermark and
 * settle window, and the integrity chain's recorded times, count on it.
 */
export function checkIngestTimes(name: string, log: readonly LogEntry[]): string[] {
  let previous: LogEntry | undefined;
  for (const entry of log) {
    if (previous?.ingestTs !== undefined && entry.ingestTs !== undefined && entry.ingestTs < previous.ingestTs) {
      return [`property 6: ${name}'s log goes back in ingest time at seq ${entry.seq} (term ${entry.term}): ${entry.ingestTs} after seq ${previous.seq}'s ${previous.ingestTs}`];
    }
    previous = entry;
  }
  return [];
}
