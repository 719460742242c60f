import { SELF_SOURCE, newEventId, type AuditEvent } from '@auditlake/model';
import { ClientRefusals, type RefusalSummary, type RefusalVerdict } from './client-refusals.js';

export interface RefusedAccess {
  status: 401 | 403;
  /** The principal when known (403), else `anonymous`. */
  userId: string;
  /** `auth:Authenticate` for 401, the refused action (e.g. `audit:Search`) for 403. */
  action: string;
  /** `METHOD /path` of the refused request (the route pattern, never the query string). */
  resource: string;
  /** Why, in words that hold no part of the presented credential. */
  reason: string;
  /** The presented scheme (`Token`, `Bearer`, `AccessKey`) when it is one of those. */
  scheme?: string;
  /** A short keyed hash of the presented credential (see Authenticator). */
  fingerprint?: string;
  clientAddress: string;
}

export interface DenyRecorderOptions {
  /** Refusals recorded per second at most, over all clients; a burst of this size is allowed. */
  perSecond: number;
  /** Refusals per client address per window recorded one by one; past it the client gets 429. */
  perClientMax: number;
  perClientWindowMs: number;
  /** Client addresses tracked at once (the rest are counted together). */
  clientsMax?: number;
  now?: () => number;
  /** Stores the DENY event; failures are reported through `onError`, never thrown to the caller. */
  record: (event: AuditEvent, freshId: string) => Promise<void>;
  onSuppressed?: () => void;
  onError?: (err: unknown) => void;
}

const CLIENTS_MAX_DEFAULT = 10_000;

/**
 * Client summaries recorded one by one per flush; the rest of that flush's become one event.
 * Summaries did not draw on the per-second bucket: 3,000 flooding addresses (any IPv6 client
 * has that many) made 2,979 summary events at once when their windows ended.
 */
export const SUMMARIES_RECORDED_MAX = 20;

/** How often a refusal looks for ended windows (each look walks every tracked client). */
const FLUSH_INTERVAL_MS = 1_000;

/** Addresses a combined summary names (those refused most). */
const COMBINED_NAMED_MAX = 10;

/**
 * Records refused access (401/403) as DENY audit events, bounded twice so a flood of bad
 * requests cannot grow the store without bound: per client address, past `perClientMax`
 * refusals in a window the client is answered 429 and the window is recorded as one summary
 * event ("N refused requests from X"); over all clients, a token bucket caps the events per
 * second, and what it drops is counted. `close()` records the summaries of open windows.
 */
export class DenyRecorder {
  readonly #options: DenyRecorderOptions;
  readonly #now: () => number;
  readonly #clients: ClientRefusals;
  readonly #timer: NodeJS.Timeout;
  #tokens: number;
  #refilledAtMs: number;
  /** When a refusal next looks for ended windows. */
  #nextFlushMs = 0;
  #closed = false;
  /** Records under way, awaited by close() so none is cut off by the store closing. */
  readonly #inflight = new Set<Promise<void>>();

  constructor(options: DenyRecorderOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#tokens = options.perSecond;
    this.#refilledAtMs = this.#now();
    this.#clients = new ClientRefusals({ refusalsMax: options.perClientMax, windowMs: options.perClientWindowMs, clientsMax: options.clientsMax ?? CLIENTS_MAX_DEFAULT });
    // Summaries of ended windows are also recorded when the flooding client has gone quiet.
    this.#timer = setInterval(() => this.flush(), options.perClientWindowMs);
    this.#timer.unref();
  }

  /**
   * Counts a refusal and records it, unless its client is past the per-client threshold: then
   * nothing is recorded now and the caller answers 429 with `Retry-After: retryAfterSec`.
   */
  refuse(access: RefusedAccess): RefusalVerdict {
    const nowMs = this.#now();
    if (nowMs >= this.#nextFlushMs) this.flush();
    const verdict = this.#clients.refuse(access.clientAddress, nowMs);
    if (verdict.limited) return verdict;
    if (!this.#take(nowMs)) {
      this.#options.onSuppressed?.();
      return verdict;
    }
    const parts = [`HTTP ${access.status}: ${access.reason}`];
    if (access.scheme !== undefined) parts.push(`scheme ${access.scheme}`);
    if (access.fingerprint !== undefined) parts.push(`credential fingerprint ${access.fingerprint}`);
    parts.push(`client ${access.clientAddress}`);
    this.#record({ userId: access.userId, action: access.action, resource: access.resource, details: parts.join('; ') }, nowMs);
    return verdict;
  }

  /**
   * Records the summaries of windows that have ended (also run by a timer): the first
   * SUMMARIES_RECORDED_MAX one by one, any more as one event.
   */
  flush(): void {
    const nowMs = this.#now();
    this.#nextFlushMs = nowMs + FLUSH_INTERVAL_MS;
    const summaries = this.#clients.takeEnded(nowMs, this.#closed);
    for (const summary of summaries.slice(0, SUMMARIES_RECORDED_MAX)) this.#recordSummary(summary);
    if (summaries.length > SUMMARIES_RECORDED_MAX) this.#recordCombined(summaries.slice(SUMMARIES_RECORDED_MAX));
  }

  /**
   * Records every open window's summary and waits for records under way; call before the
   * store closes. Idempotent.
   */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      clearInterval(this.#timer);
      this.flush();
    }
    await Promise.allSettled([...this.#inflight]);
  }

  #recordSummary(summary: RefusalSummary): void {
    const from = new Date(summary.fromMs).toISOString();
    const to = new Date(summary.toMs).toISOString();
    this.#record(
      {
        userId: 'anonymous',
        action: 'auth:Authenticate',
        resource: `client ${summary.clientAddress}`,
        details: `${summary.count} refused requests from ${summary.clientAddress} between ${from} and ${to}, answered 429 after the first ${this.#options.perClientMax} (recorded one by one); this summary stands for them`,
      },
      this.#now(),
    );
  }

  #recordCombined(summaries: RefusalSummary[]): void {
    const count = summaries.reduce((n, summary) => n + summary.count, 0);
    const from = new Date(Math.min(...summaries.map((summary) => summary.fromMs))).toISOString();
    const to = new Date(Math.max(...summaries.map((summary) => summary.toMs))).toISOString();
    const most = [...summaries].sort((a, b) => b.count - a.count).slice(0, COMBINED_NAMED_MAX);
    this.#record(
      {
        userId: 'anonymous',
        action: 'auth:Authenticate',
        resource: `${summaries.length} clients`,
        details: `${count} refused requests from ${summaries.length} more clients between ${from} and ${to}, each answered 429 after its first ${this.#options.perClientMax} (recorded one by one); those refused most: ${most.map((summary) => `${summary.clientAddress} (${summary.count})`).join(', ')}; this summary stands for them`,
      },
      this.#now(),
    );
  }

  #record(fields: Pick<AuditEvent, 'userId' | 'action' | 'resource' | 'details'>, nowMs: number): void {
    const eventId = newEventId(nowMs);
    const event: AuditEvent = { eventId, source: SELF_SOURCE, decision: 'DENY', tables: [], query: '', timestamp: nowMs, ...fields };
    const recording = this.#options.record(event, eventId).catch((err: unknown) => this.#options.onError?.(err));
    this.#inflight.add(recording);
    void recording.finally(() => this.#inflight.delete(recording));
  }

  #take(nowMs: number): boolean {
    const perSecond = this.#options.perSecond;
    this.#tokens = Math.min(perSecond, this.#tokens + ((nowMs - this.#refilledAtMs) / 1000) * perSecond);
    this.#refilledAtMs = nowMs;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
