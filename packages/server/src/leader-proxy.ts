import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';

export const PROXIED_HEADER = 'x-auditlake-proxied';
const PROXY_TIMEOUT_MS = 10_000;
const FORWARDED_HEADERS = ['authorization', 'accept', 'content-type'];

/**
 * Answers a request by asking the leader (a standby serves reads and settings this way, so
 * every node shows the leader's view). Returns false when the leader could not be reached, so
 * the caller can answer from the local replica instead. A proxied request is never proxied
 * again, so two nodes that each think the other leads cannot loop.
 */
export async function proxyToLeader(leaderUrl: string | undefined, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
  if (leaderUrl === undefined || request.headers[PROXIED_HEADER] !== undefined) return false;
  const headers: Record<string, string> = { [PROXIED_HEADER]: '1' };
  for (const name of FORWARDED_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  let res: Response;
  try {
    res = await fetch(leaderUrl + request.url, {
      method: request.method,
      headers,
      ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
      signal: AbortSignal.timeout(PROXY_TIMEOUT_MS),
    });
  } catch {
    return false;
  }
  // A leader that stepped down meanwhile answers 503; the local replica is the better answer.
  if (res.status === 503) return false;
  reply.code(res.status);
  const contentType = res.headers.get('content-type');
  if (contentType) reply.header('content-type', contentType);
  // Our own answer headers (the next page's cursor of a binary answer, a tier note) go along.
  for (const [name, value] of res.headers) if (name.startsWith('x-auditlake-') && name !== PROXIED_HEADER) reply.header(name, value);
  reply.header(PROXIED_HEADER, leaderUrl);
  // Streamed through, so a large NDJSON answer is never held whole on this node.
  await reply.send(res.body === null ? '' : Readable.fromWeb(res.body));
  return true;
}
