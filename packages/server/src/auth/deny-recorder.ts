import { SELF_SOURCE, newEventId, type AuditEvent } from '@auditlake/model';

export interface RefusedAccess {
  status: 401 | 403;
  /** The principal when known (403), else `anonymous`. */
  userId: string;
  /** `auth:Authenticate` for 401, the refused action (e.g. `audit:Search`) for 403. */
  action: string;
  /** `METHOD /path` of the refused request. */
  resource: string;
  reason: string;
  clientAddress: string;
}

export interface DenyRecorderOptions {
  /** Refusals recorded per second at most; a burst of this size is allowed. */
  perSecond: number;
  now?: () => number;
  /** Stores the DENY event; failures are reported through `onError`, never thrown to the caller. */
  record: (event: AuditEvent, freshId: string) => Promise<void>;
  onSuppressed?: () => void;
  onError?: (err: unknown) => void;
}

/**
 * Records refused access (401/403) as DENY audit events, bounded by a token bucket so a
 * credential-stuffing flood cannot fill the disk. What the bucket drops is still counted.
 */
export class DenyRecorder {
  readonly #options: DenyRecorderOptions;
  readonly #now: () => number;
  #tokens: number;
  #refilledAtMs: number;

  constructor(options: DenyRecorderOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#tokens = options.perSecond;
    this.#refilledAtMs = this.#now();
  }

  /** Returns true when the refusal was recorded, false when it was rate-limited. */
  refuse(access: RefusedAccess): boolean {
    if (!this.#take()) {
      this.#options.onSuppressed?.();
      return false;
    }
    const nowMs = this.#now();
    const eventId = newEventId(nowMs);
    const event: AuditEvent = {
      eventId,
      userId: access.userId,
      source: SELF_SOURCE,
      action: access.action,
      resource: access.resource,
      decision: 'DENY',
      tables: [],
      query: '',
      details: `HTTP ${access.status}: ${access.reason}; client ${access.clientAddress}`,
      timestamp: nowMs,
    };
    this.#options.record(event, eventId).catch((err: unknown) => this.#options.onError?.(err));
    return true;
  }

  #take(): boolean {
    const nowMs = this.#now();
    const perSecond = this.#options.perSecond;
    this.#tokens = Math.min(perSecond, this.#tokens + ((nowMs - this.#refilledAtMs) / 1000) * perSecond);
    this.#refilledAtMs = nowMs;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}
