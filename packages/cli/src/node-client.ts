import { AuditError, AuditErrorCode } from '@auditlake/model';

export interface NodeClientOptions {
  /** The node's base URL, e.g. http://127.0.0.1:7070. */
  url: string;
  /** Sent as `Authorization: Token <token>`. */
  token: string;
  /** One request's deadline. */
  timeoutMs?: number;
  /** Attempts per request when the node cannot be reached or answers 5xx (the requests sent are idempotent). */
  attemptsMax?: number;
  /** Attempts of a request while the node answers 429 (default RATE_LIMITED_ATTEMPTS_MAX). */
  rateLimitedAttemptsMax?: number;
  retryDelayMsInitial?: number;
  retryDelayMsMax?: number;
  /** Told before each retry, so the user sees why nothing moves. */
  onRetry?: (reason: string, delayMs: number) => void;
  /** Injected so tests do not wait. */
  sleep?: (ms: number) => Promise<void>;
  /** The transport; injected so a test can act at an exact point between two requests. */
  fetch?: typeof fetch;
}

export const REQUEST_TIMEOUT_MS = 60_000;
export const ATTEMPTS_MAX = 8;
/** Attempts of one request while the node answers 429 (too many requests). */
export const RATE_LIMITED_ATTEMPTS_MAX = 8;
/** The pause after a 429 without a usable `Retry-After`, and the longest one honoured. */
const RETRY_AFTER_MS_DEFAULT = 1000;
const RETRY_AFTER_MS_MAX = 60_000;

/**
 * The CLI's HTTP client of a node's own API: one base URL and token, a deadline per request,
 * and retries with a doubling pause (0.5 s up to 10 s) when the node is unreachable or answers
 * 5xx. Only idempotent requests go through it (ingest with eventIds, reads). A 401/403 is an
 * error naming the token's problem; other answers are the caller's to read.
 */
export class NodeClient {
  readonly url: string;
  /** `url` as messages show it: credentials in it (`http://user:password@host`) masked. */
  readonly shown: string;
  readonly #token: string;
  readonly #timeoutMs: number;
  readonly #attemptsMax: number;
  readonly #rateLimitedAttemptsMax: number;
  readonly #delayMsInitial: number;
  readonly #delayMsMax: number;
  readonly #onRetry: (reason: string, delayMs: number) => void;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #fetch: typeof fetch;

  constructor(options: NodeClientOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.shown = redactUrl(this.url);
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? REQUEST_TIMEOUT_MS;
    this.#attemptsMax = options.attemptsMax ?? ATTEMPTS_MAX;
    this.#rateLimitedAttemptsMax = options.rateLimitedAttemptsMax ?? RATE_LIMITED_ATTEMPTS_MAX;
    this.#delayMsInitial = options.retryDelayMsInitial ?? 500;
    this.#delayMsMax = options.retryDelayMsMax ?? 10_000;
    this.#onRetry = options.onRetry ?? (() => undefined);
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.#fetch = options.fetch ?? fetch;
  }

  /** Waits `ms` (the injected sleep), telling `onRetry` why. */
  async #pause(ms: number, reason: string): Promise<void> {
    this.#onRetry(reason, ms);
    await this.#sleep(ms);
  }

  /**
   * Sends a request, its answer's body read. An answer 429 is sent again after its
   * `Retry-After` (bounded), RATE_LIMITED_ATTEMPTS_MAX times at most, for every request as for
   * ingest (all are idempotent): export and verify stopped at the first 429 (review).
   */
  async request(path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<NodeAnswer> {
    for (let limited = 1; ; limited++) {
      const answer = await this.#requestOnce(path, init);
      if (answer.status !== 429 || this.#rateLimitedAttemptsMax <= 1) return answer;
      const message = errorText(await answer.text());
      if (limited >= this.#rateLimitedAttemptsMax) throw new AuditError(AuditErrorCode.UNREACHABLE, `${this.shown}${path} answered 429 (too many requests) ${limited} times: ${message}`, { retryable: true });
      await this.#pause(retryAfterMs(answer.headers.get('retry-after')), `429 ${message}`);
    }
  }

  async #requestOnce(path: string, init: { method?: string; headers?: Record<string, string>; body?: string }): Promise<NodeAnswer> {
    let delayMs = this.#delayMsInitial;
    for (let attempt = 1; ; attempt++) {
      let failure: string;
      try {
        const response = await this.#fetch(this.url + path, {
          ...init,
          headers: { ...init.headers, authorization: `Token ${this.#token}` },
          signal: AbortSignal.timeout(this.#timeoutMs),
        });
        if (response.status === 401 || response.status === 403) {
          const answer = await response.text();
          throw new AuditError(response.status === 401 ? AuditErrorCode.UNAUTHENTICATED : AuditErrorCode.FORBIDDEN, `${this.shown} refused the token (${response.status}): ${errorText(answer)}`);
        }
        // The body is read here, where a connection cut mid-answer is retried like one that
        // never answered: read by the caller, it ended the command with a stack trace (review).
        const text = await response.text();
        if (response.status < 500) return nodeAnswer(text, response, `${this.shown}${path}`);
        failure = `${response.status} ${errorText(text)}`;
      } catch (err) {
        if (err instanceof AuditError) throw err;
        // A transport error may quote the URL (fetch refuses one with credentials, naming it).
        failure = redactUrl(err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err));
      }
      if (attempt >= this.#attemptsMax) {
        throw new AuditError(AuditErrorCode.UNREACHABLE, `${this.shown}${path}: no answer after ${attempt} attempts; the last: ${failure}`, { retryable: true });
      }
      await this.#pause(delayMs, failure);
      delayMs = Math.min(delayMs * 2, this.#delayMsMax);
    }
  }
}

/**
 * A node's answer, its body already read (NodeClient.request): `json()` of a body that is not
 * JSON (a proxy's HTML page answered 200) is an AUDIT_UNREACHABLE error naming the URL and the
 * status, not a SyntaxError with a stack trace.
 */
export interface NodeAnswer {
  readonly ok: boolean;
  readonly status: number;
  readonly headers: Headers;
  text(): Promise<string>;
  json(): Promise<unknown>;
}

function nodeAnswer(text: string, answer: Response, where: string): NodeAnswer {
  return {
    ok: answer.ok,
    status: answer.status,
    headers: answer.headers,
    text: async () => text,
    json: async () => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new AuditError(AuditErrorCode.UNREACHABLE, `${where} answered ${answer.status} with a body that is not JSON: ${text.slice(0, 200)}`, { retryable: true });
      }
    },
  };
}

/** `Retry-After` in seconds or as an HTTP date, in ms (a default when missing or unreadable, capped). */
function retryAfterMs(header: string | null, now = Date.now()): number {
  if (header === null || header.trim() === '') return RETRY_AFTER_MS_DEFAULT;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - now;
  if (!Number.isFinite(ms)) return RETRY_AFTER_MS_DEFAULT;
  return Math.min(Math.max(ms, 0), RETRY_AFTER_MS_MAX);
}

/** The `error` of a JSON error answer, else the answer's first 200 characters. */
export function errorText(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: unknown };
    if (typeof parsed.error === 'string') return parsed.error;
  } catch {
    // not JSON: shown as it is
  }
  return body.slice(0, 200);
}

/** `text` with the userinfo of every URL in it (`http://bob:s3cr3t@host`) replaced by `***`, so no message shows a password. */
export function redactUrl(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]*@/gi, '$1***@');
}
