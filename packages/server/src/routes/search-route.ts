import { once } from 'node:events';
import { encodeCursor, isAuditError, parseSearchParams, toEventOutput, type EventOutput, type SearchFilter } from '@auditlake/model';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ARROW_STREAM_MEDIA_TYPE, encodeArrowStream } from '../arrow-events.js';
import type { AuditSearch } from '../audit-search.js';
import { PROXY_TIMEOUT_MS, proxyToLeader } from '../leader-proxy.js';
import { eventOutputJson, searchResponseBody } from '../search-response.js';
import type { Membership } from '../membership.js';
import { giveUpUnreadAnswer, searchDeadline } from '../search-deadline.js';
import './route-access.js';

export interface SearchRouteOptions {
  search: AuditSearch;
  viewerMaxPage: number;
  membership: Membership;
  /** How long a search may read (auditlake.audit.search.timeout.ms). */
  searchTimeoutMs: number;
}

export const STALE_HEADER = 'x-auditlake-stale';
export const NEXT_CURSOR_HEADER = 'x-auditlake-next-cursor';
const NDJSON = 'application/x-ndjson; charset=utf-8';

function wantsNdjson(accept: string | undefined): boolean {
  return accept !== undefined && accept.includes('application/x-ndjson');
}

/**
 * Streams matching local events as NDJSON, one line each: the socket's backpressure paces the
 * LevelDB iterator, so `curl … | jq` works over any answer. A page cut at the limit ends with
 * a `{"nextCursor": …}` line. Stopped by its deadline once the status is sent, it ends with a
 * `{"error": …, "code": …}` line instead: the answer is incomplete. A client that stops reading
 * holds it at a full socket until the deadline, and then its connection is closed (it reads no
 * last line): 30 such streams held 1.2 GB, for good.
 */
async function streamNdjson(reply: FastifyReply, events: AsyncGenerator<EventOutput>, limit: number, stale: boolean, signal: AbortSignal): Promise<void> {
  reply.hijack();
  const out = reply.raw;
  out.writeHead(200, { 'content-type': NDJSON, ...(stale ? { [STALE_HEADER]: 'true' } : {}) });
  let sent = 0;
  let last: EventOutput | undefined;
  try {
    for await (const event of events) {
      if (out.destroyed) break;
      if (sent === limit) {
        if (last !== undefined) out.write(JSON.stringify({ nextCursor: encodeCursor(last) }) + '\n');
        break;
      }
      sent++;
      last = event;
      if (!out.write(eventOutputJson(event) + '\n')) await once(out, 'drain', { signal });
    }
  } catch (err) {
    if (signal.aborted && out.writableNeedDrain) {
      // Stopped waiting for a client that does not read: nothing more can reach it.
      out.destroy();
      return;
    }
    // Headers are out: the error can only be told as the last line (a client gone reads none).
    if (!isAuditError(err)) throw err;
    if (!out.destroyed) out.write(JSON.stringify({ error: err.message, code: err.code }) + '\n');
  } finally {
    out.end();
  }
}

function wantsArrow(accept: string | undefined): boolean {
  return accept !== undefined && accept.includes(ARROW_STREAM_MEDIA_TYPE);
}

/**
 * The page as an Arrow IPC stream (the tiered columns; see arrow-events.ts). The body is
 * binary, so the cursor to the next page travels in the `x-auditlake-next-cursor` header.
 */
function sendArrow(reply: FastifyReply, page: Awaited<ReturnType<AuditSearch['page']>>): FastifyReply {
  if (page.tierNote) reply.header('x-auditlake-tier-note', encodeURIComponent(page.tierNote));
  if (page.nextCursor !== undefined) reply.header(NEXT_CURSOR_HEADER, page.nextCursor);
  return reply.type(ARROW_STREAM_MEDIA_TYPE).send(Buffer.from(encodeArrowStream(page.events.map(toEventOutput))));
}

/** The search parameters of a request (shared by the search and stats routes). */
export function searchFilter(query: unknown, viewerMaxPage: number): SearchFilter {
  return parseSearchParams(query as Record<string, unknown>, viewerMaxPage);
}

/** The answer to a search in the form asked for (Arrow, NDJSON or JSON), read under `signal`. */
async function answer(reply: FastifyReply, search: AuditSearch, accept: string | undefined, filter: SearchFilter, stale: boolean, signal: AbortSignal, timeoutMs: number): Promise<unknown> {
  const ndjson = wantsNdjson(accept);
  if (ndjson && !wantsArrow(accept) && !(await search.hasTiers())) return streamNdjson(reply, search.localStream(filter, signal), filter.limit, stale, signal);
  // A whole page (merged with the tiers when history has left for S3): once handed to the
  // socket, taken by its client within the search's time, or its connection is closed.
  const page = await search.page(filter, signal);
  giveUpUnreadAnswer(reply, timeoutMs);
  if (wantsArrow(accept)) return sendArrow(reply, page);
  if (page.tierNote) reply.header('x-auditlake-tier-note', encodeURIComponent(page.tierNote));
  if (ndjson) {
    reply.header('content-type', NDJSON);
    const lines = page.events.map((e) => eventOutputJson(e) + '\n');
    if (page.nextCursor !== undefined) lines.push(JSON.stringify({ nextCursor: page.nextCursor }) + '\n');
    return lines.join('');
  }
  // Composed as text: local events reuse the JSON the store holds (search-response.ts).
  return reply.type('application/json; charset=utf-8').send(searchResponseBody(page, stale));
}

export function registerSearchRoute(app: FastifyInstance, options: SearchRouteOptions): void {
  // A browser navigating here gets the Admin UI page instead (http-app's page hook).
  app.get('/admin/audit', { config: { access: { role: 'admin', action: 'audit:Search' } } }, async (request, reply) => {
    const filter = searchFilter(request.query, options.viewerMaxPage);
    const { membership, search } = options;
    // A standby shows the leader's view; without a reachable leader, its own replica, marked stale.
    // The leader's search may read up to its own deadline before answering.
    if (await proxyToLeader(membership.leaderUrl(), request, reply, { timeoutMs: options.searchTimeoutMs + PROXY_TIMEOUT_MS })) return reply;
    const stale = !membership.isLeader();
    if (stale) reply.header(STALE_HEADER, 'true');
    const deadline = searchDeadline(reply, options.searchTimeoutMs);
    try {
      return await answer(reply, search, request.headers.accept, filter, stale, deadline.signal, options.searchTimeoutMs);
    } finally {
      deadline.done();
    }
  });
}
