import { Readable } from 'node:stream';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { FastifyReply, FastifyRequest } from 'fastify';

export const PROXIED_HEADER = 'x-auditlake-proxied';
/** How long a proxied request waits for the leader's answer to begin, unless the route says otherwise. */
export const PROXY_TIMEOUT_MS = 10_000;
/**
 * For admin operations that run as long as their work (a maintenance run, a tier adoption):
 * just under the 300 s that Node's fetch itself waits for an answer's headers (undici's
 * headersTimeout), so the answer past it names the wait, not a broken connection.
 */
export const LONG_PROXY_TIMEOUT_MS = 290_000;
const FORWARDED_HEADERS = ['authorization', 'accept', 'content-type'];
/**
 * Connection errors after which the leader cannot have seen the request: a write may then be
 * answered here (which refuses it on a standby) without hiding one the leader carried out.
 */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * Request bodies as their client sent them, for routes whose parser keeps the text
 * ({@link keepBodyText}): forwarded as they are. Re-serialised from the parsed value, a body could
 * change its meaning on the way (`1e400` is parsed as Infinity and written as `null`, which the
 * settings route takes as "unset": a value the leader refuses became an unset on a standby, review).
 */
const bodyTexts = new WeakMap<FastifyRequest, string>();

/** Keeps a request body's text as it was sent, for proxyToLeader to forward. */
export function keepBodyText(request: FastifyRequest, text: string): void {
  bodyTexts.set(request, text);
}

export interface ProxyOptions {
  /**
   * How long to wait for the leader's answer to begin (its status and headers); the body then
   * streams for as long as the leader sends it. Default {@link PROXY_TIMEOUT_MS}.
   */
  timeoutMs?: number;
}

/**
 * Answers a request by asking the leader (a standby serves reads and settings this way, so
 * every node shows the leader's view). Returns false when the leader could not be reached, so
 * the caller can answer from the local replica instead. A proxied request is never proxied
 * again, so two nodes that each think the other leads cannot loop.
 *
 * A write (any method but GET and HEAD) the leader may have received — it took longer than the
 * timeout to answer, or the connection broke — is not answered here: the leader may have carried
 * it out, and the local answer (a standby's refusal, "nothing was saved") could be false. It
 * fails with AUDIT_LEADER_NO_ANSWER (504) saying so instead.
 */
export async function proxyToLeader(leaderUrl: string | undefined, request: FastifyRequest, reply: FastifyReply, options: ProxyOptions = {}): Promise<boolean> {
  if (leaderUrl === undefined || request.headers[PROXIED_HEADER] !== undefined) return false;
  const timeoutMs = options.timeoutMs ?? PROXY_TIMEOUT_MS;
  const headers: Record<string, string> = { [PROXIED_HEADER]: '1' };
  for (const name of FORWARDED_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  // The timeout bounds the wait for the answer's start only: a large NDJSON or Arrow answer
  // streams for longer, bounded by the leader's own search deadline. A client that goes away
  // stops the leader's answer too.
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  // The response's 'close' (not the request's, which fires once its body is read): the
  // connection ended, or our answer was sent, after which aborting changes nothing.
  reply.raw.once('close', () => abort.abort(new Error('the connection to the client closed')));
  let res: Response;
  try {
    const text = bodyTexts.get(request);
    res = await fetch(leaderUrl + originForm(request.url), {
      method: request.method,
      headers,
      ...(text !== undefined ? { body: text } : request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      signal: abort.signal,
    });
  } catch (err) {
    if (request.method === 'GET' || request.method === 'HEAD' || notSent(err)) return false;
    const why = abort.signal.aborted || causeCode(err) === 'UND_ERR_HEADERS_TIMEOUT' ? `gave no answer within ${timeoutMs} ms` : 'broke the connection before answering';
    throw new AuditError(
      AuditErrorCode.LEADER_NO_ANSWER,
      `this node passed the request to the leader (${leaderUrl}), which ${why}: it may have carried it out, so look (GET the same resource, or search the audit log for the record it writes) before sending it again`,
    );
  } finally {
    clearTimeout(timer);
  }
  let body: Readable | string | undefined;
  if (res.status === 503) {
    // A leader that stepped down meanwhile (or is starting or stopping) answers so: the local
    // replica is the better answer. Any other 503 (a search past its deadline, a disk that
    // refused a write) is the leader's answer, passed on.
    body = await res.text();
    if (STEPPED_DOWN_CODES.has(errorCodeOf(body))) return false;
  }
  reply.code(res.status);
  const contentType = res.headers.get('content-type');
  if (contentType) reply.header('content-type', contentType);
  const retryAfter = res.headers.get('retry-after');
  if (retryAfter) reply.header('retry-after', retryAfter);
  // Our own answer headers (the next page's cursor of a binary answer, a tier note) go along.
  for (const [name, value] of res.headers) if (name.startsWith('x-auditlake-') && name !== PROXIED_HEADER) reply.header(name, value);
  reply.header(PROXIED_HEADER, leaderUrl);
  // Streamed through, so a large NDJSON answer is never held whole on this node.
  await reply.send(body ?? (res.body === null ? '' : Readable.fromWeb(res.body)));
  return true;
}

/**
 * The path and query of a request target (RFC 9112 §3.2): an absolute-form target
 * (`GET http://host/path`), which the router routes by its path, was appended whole to the
 * leader's URL, a URL no fetch could make — a read fell back to the stale replica and a write
 * was answered 504 "it may have carried it out" though the leader never saw it (review).
 */
function originForm(target: string): string {
  if (target.startsWith('/')) return target;
  const url = new URL(target, 'http://origin-form.invalid');
  return `${url.pathname}${url.search}`;
}

/** A 503 with one of these codes says the node asked is not (or no longer) the leader. */
const STEPPED_DOWN_CODES = new Set<string | undefined>([AuditErrorCode.NOT_LEADER, AuditErrorCode.STALE_TERM, AuditErrorCode.STORE_NOT_OPEN]);

/** The `code` of an error answer's JSON body; undefined when it has none. */
function errorCodeOf(text: string): string | undefined {
  try {
    const code = (JSON.parse(text) as { code?: unknown } | null)?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a fetch failed before any byte of the request could reach the server. */
function notSent(err: unknown): boolean {
  const code = causeCode(err);
  return code !== undefined && NOT_SENT_CODES.has(code);
}

/** The code of a failed fetch's cause (ECONNREFUSED, UND_ERR_…), if any. */
function causeCode(err: unknown): string | undefined {
  const cause = err instanceof Error ? (err.cause as { code?: unknown } | undefined) : undefined;
  return typeof cause?.code === 'string' ? cause.code : undefined;
}
