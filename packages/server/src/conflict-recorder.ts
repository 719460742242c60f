import { encodeEvent, FIELD_LIMIT_BYTES, newEventId, SELF_SOURCE, truncateToBytes, type AuditEvent } from '@auditlake/model';
import type { EventIdConflict } from '@auditlake/store';
import type { Membership } from './membership.js';
import type { NodeMetrics } from './metrics.js';

/** The action of the self-audit event that records refused eventId conflicts. */
export const CONFLICT_ACTION = 'audit:EventIdConflict';
/** Conflicts one self-audit event names one by one (it counts them all). */
export const CONFLICTS_RECORDED_MAX = 20;

/** Who sent the refused events, as far as the node that refused them knows. */
export interface ConflictSender {
  /** The authenticated principal, when the events came straight from a client to this node. */
  principal?: string;
  clientAddress?: string;
  /** The node a client sent them to (this node, or the standby that forwarded them). */
  receivedBy: string;
}

export interface ConflictRecorderOptions {
  membership: Membership;
  metrics: NodeMetrics;
  log: { warn(obj: object, msg: string): void };
}

/**
 * Records events refused as eventId conflicts (an id that holds another event's content, the
 * first stored kept): counted in `auditlake_event_id_conflicts_total`, and written to the log as
 * one `audit:EventIdConflict` self-audit event per refusing request or forward, naming at most
 * CONFLICTS_RECORDED_MAX of them with both content hashes. One event per request, whatever it
 * holds, so a sender cannot make the log grow faster by sending conflicts than by sending events.
 */
export class ConflictRecorder {
  readonly #options: ConflictRecorderOptions;

  constructor(options: ConflictRecorderOptions) {
    this.#options = options;
  }

  /** Never throws: a record that cannot be written is logged (the refusal itself stands). */
  async record(conflicts: readonly EventIdConflict[], sender: ConflictSender): Promise<void> {
    if (conflicts.length === 0) return;
    this.#options.metrics.eventIdConflicts.inc(conflicts.length);
    const event = conflictEvent(conflicts, sender, Date.now());
    try {
      await this.#options.membership.receive([encodeEvent(event)], new Set([event.eventId]));
    } catch (err) {
      this.#options.log.warn(
        { err, conflicts: conflicts.length, eventIds: conflicts.slice(0, CONFLICTS_RECORDED_MAX).map((c) => c.eventId), ...sender },
        'could not record refused eventId conflicts as an audit event; they are counted in auditlake_event_id_conflicts_total',
      );
    }
  }
}

/**
 * The self-audit event for `conflicts`: `userId` the sending principal (`unknown` for events a
 * standby forwarded: its log names them), `details` what was refused and by whom it was sent.
 */
export function conflictEvent(conflicts: readonly EventIdConflict[], sender: ConflictSender, nowMs: number): AuditEvent {
  const who = sender.principal === undefined ? `sent by a client of node ${sender.receivedBy} (forwarded: that node's log names the sender)` : `sent by ${JSON.stringify(sender.principal)}`;
  const from = `${who}${sender.clientAddress === undefined ? '' : ` from ${sender.clientAddress}`}, received by node ${sender.receivedBy}`;
  const head = `refused ${conflicts.length} ${conflicts.length === 1 ? 'event' : 'events'} whose eventId holds an event with other content (the event stored first is kept)`;
  // Named while they fit beside who sent them: cut to the field's limit, twenty ids of 128
  // control characters (each escaped to ~770 bytes) pushed the sender and address off the end
  // (review). The room for "K more not named" is kept too (at most 30 bytes).
  let room = FIELD_LIMIT_BYTES.details - Buffer.byteLength(`${head}; ; ${from}`) - 30;
  const named: string[] = [];
  for (const c of conflicts.slice(0, CONFLICTS_RECORDED_MAX)) {
    const text = `eventId ${JSON.stringify(c.eventId)}: stored content ${c.storedHash}, refused content ${c.refusedHash}`;
    room -= Buffer.byteLength(text) + 2;
    if (room < 0) break;
    named.push(text);
  }
  const more = conflicts.length - named.length;
  const details = [head, ...named, ...(more > 0 ? [`${more} more not named`] : []), from].join('; ');
  const eventId = newEventId(nowMs);
  return {
    eventId,
    userId: sender.principal ?? 'unknown',
    source: SELF_SOURCE,
    action: CONFLICT_ACTION,
    resource: 'POST /v1/api/audit',
    decision: 'DENY',
    tables: [],
    query: '',
    details: truncateToBytes(details, FIELD_LIMIT_BYTES.details),
    timestamp: nowMs,
  };
}
