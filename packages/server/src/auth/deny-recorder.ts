import { SELF_SOURCE, newEventId, type AuditEvent } from '@auditlake/model';
import { clientOf } from '../connection-limits.js';
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
  /**
   * Refusals recorded one by one per second at most, over all clients, for each of the two
   * kinds (401 to an unknown sender, 403 to a known principal); a burst of this size is allowed.
   */
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

/** Principals whose refusals over the per-second bound are counted one by one; the rest together. */
const UNRECORDED_PRINCIPALS_MAX = 100;
/** Actions counted one by one per principal in an unrecorded summary; the rest together. */
const UNRECORDED_ACTIONS_MAX = 10;

/**
 * The two kinds of refusal, each with a bucket of its own: a flood of requests without valid
 * credentials (any address, no secret needed) must not use up the records of a known
 * principal's refused requests (review: 1,920 bad tokens from 120 addresses left 2 of a
 * principal's 10 refused erasures recorded).
 */
type RefusalKind = 'anonymous' | 'principal';

/** A token bucket. */
interface Bucket {
  tokens: number;
  refilledAtMs: number;
}

/** Refusals of one principal the bucket dropped since the last flush, by action. */
interface UnrecordedByPrincipal {
  count: number;
  actions: Map<string, number>;
}

/** Refusals of one kind the bucket dropped since the last flush: recorded as summaries then. */
interface Unrecorded {
  count: number;
  fromMs: number;
  toMs: number;
  /** For the principal kind: by principal, up to UNRECORDED_PRINCIPALS_MAX. */
  principals: Map<string, UnrecordedByPrincipal>;
}

/**
 * Records refused access (401/403) as DENY audit events, bounded twice so a flood of bad
 * requests cannot grow the store without bound: per client (an address; an IPv6 /64, which one
 * host holds whole), past `perClientMax` refusals in a window the client is answered 429 and
 * the window is recorded as one summary event ("N refused requests from X"); over all clients,
 * a token bucket per kind caps the events per second, and what it drops is counted and recorded
 * as summaries at the next flush (per principal for 403s), so no refusal goes unrecorded.
 * `close()` records the summaries of open windows.
 */
export class DenyRecorder {
  readonly #options: DenyRecorderOptions;
  readonly #now: () => number;
  readonly #clients: ClientRefusals;
  readonly #timer: NodeJS.Timeout;
  readonly #buckets: Record<RefusalKind, Bucket>;
  readonly #unrecorded: Record<RefusalKind, Unrecorded | undefined> = { anonymous: undefined, principal: undefined };
  /** Flushes the unrecorded refusals' summaries when no later refusal does. */
  #unrecordedTimer: NodeJS.Timeout | undefined;
  /** When a refusal next looks for ended windows. */
  #nextFlushMs = 0;
  #closed = false;
  /** Records under way, awaited by close() so none is cut off by the store closing. */
  readonly #inflight = new Set<Promise<void>>();

  constructor(options: DenyRecorderOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    const startMs = this.#now();
    this.#buckets = { anonymous: { tokens: options.perSecond, refilledAtMs: startMs }, principal: { tokens: options.perSecond, refilledAtMs: startMs } };
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
    const verdict = this.#clients.refuse(clientOf(access.clientAddress), nowMs);
    if (verdict.limited) return verdict;
    const kind: RefusalKind = access.status === 401 ? 'anonymous' : 'principal';
    if (!this.#take(this.#buckets[kind], nowMs)) {
      this.#options.onSuppressed?.();
      this.#countUnrecorded(kind, access, nowMs);
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
    this.#recordUnrecorded();
  }

  #countUnrecorded(kind: RefusalKind, access: RefusedAccess, nowMs: number): void {
    this.#unrecordedTimer ??= setTimeout(() => {
      this.#unrecordedTimer = undefined;
      this.flush();
    }, FLUSH_INTERVAL_MS).unref();
    const unrecorded = (this.#unrecorded[kind] ??= { count: 0, fromMs: nowMs, toMs: nowMs, principals: new Map<string, UnrecordedByPrincipal>() });
    unrecorded.count++;
    unrecorded.toMs = nowMs;
    if (kind === 'anonymous') return;
    const name = unrecorded.principals.has(access.userId) || unrecorded.principals.size < UNRECORDED_PRINCIPALS_MAX ? access.userId : undefined;
    if (name === undefined) return;
    const principal: UnrecordedByPrincipal = unrecorded.principals.get(name) ?? { count: 0, actions: new Map<string, number>() };
    unrecorded.principals.set(name, principal);
    principal.count++;
    if (principal.actions.has(access.action) || principal.actions.size < UNRECORDED_ACTIONS_MAX) principal.actions.set(access.action, (principal.actions.get(access.action) ?? 0) + 1);
  }

  /**
   * Records what the buckets dropped since the last flush: one event for the anonymous
   * refusals, and for principals' refusals one per principal (SUMMARIES_RECORDED_MAX at most,
   * the others together in one), so a search by user finds a principal's refused requests
   * however many others were refused with them.
   */
  #recordUnrecorded(): void {
    const { anonymous, principal } = this.#unrecorded;
    this.#unrecorded.anonymous = undefined;
    this.#unrecorded.principal = undefined;
    const bound = `over the bound of ${this.#options.perSecond} recorded one by one per second`;
    const span = (u: Unrecorded) => `between ${new Date(u.fromMs).toISOString()} and ${new Date(u.toMs).toISOString()}`;
    if (anonymous !== undefined) {
      this.#record({ userId: 'anonymous', action: 'auth:Authenticate', resource: 'refusals not recorded one by one', details: `${anonymous.count} refused requests without valid credentials ${span(anonymous)}, ${bound}; this summary stands for them` }, this.#now());
    }
    if (principal === undefined) return;
    const most = [...principal.principals].sort((a, b) => b[1].count - a[1].count);
    for (const [name, refused] of most.slice(0, SUMMARIES_RECORDED_MAX)) {
      const actions = [...refused.actions].sort((a, b) => b[1] - a[1]);
      const named = actions.reduce((n, [, count]) => n + count, 0);
      const listed = actions.map(([action, count]) => `${action} ${count}`).join(', ') + (named < refused.count ? `, other actions ${refused.count - named}` : '');
      this.#record({ userId: name, action: (actions[0] as [string, number])[0], resource: 'refusals not recorded one by one', details: `${refused.count} refused requests of principal ${name} ${span(principal)}, ${bound}: ${listed}; this summary stands for them` }, this.#now());
    }
    const rest = principal.count - most.slice(0, SUMMARIES_RECORDED_MAX).reduce((n, [, refused]) => n + refused.count, 0);
    if (rest > 0) {
      this.#record({ userId: 'several principals', action: 'auth:Authorize', resource: 'refusals not recorded one by one', details: `${rest} refused requests of principals other than the ${SUMMARIES_RECORDED_MAX} refused most (each of those has a summary of its own) ${span(principal)}, ${bound}; this summary stands for them` }, this.#now());
    }
  }

  /**
   * Records every open window's summary and waits for records under way; call before the
   * store closes. Idempotent.
   */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      clearInterval(this.#timer);
      clearTimeout(this.#unrecordedTimer);
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

  #take(bucket: Bucket, nowMs: number): boolean {
    const perSecond = this.#options.perSecond;
    bucket.tokens = Math.min(perSecond, bucket.tokens + ((nowMs - bucket.refilledAtMs) / 1000) * perSecond);
    bucket.refilledAtMs = nowMs;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }
}
