import type { AuditStore } from '@auditlake/store';
import type { Acked } from './workload.js';

/** One log entry as the checks compare it. */
export interface LogEntry {
  seq: number;
  term: number;
  eventId: string;
}

/** The whole log of a store, in seq order. */
export async function readLog(store: AuditStore): Promise<LogEntry[]> {
  const entries: LogEntry[] = [];
  let after = 0;
  for (;;) {
    const page = await store.readBySeq(after, 5000);
    if (page.length === 0) return entries;
    for (const event of page) entries.push({ seq: event.seq, term: event.term, eventId: event.eventId });
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
