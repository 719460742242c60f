import { once } from 'node:events';
import { parseSearchParams, toEventOutput, type SearchFilter, type StoredEvent } from '@auditlake/model';
import { mergedSearch } from '@auditlake/query';
import type { AuditStore } from '@auditlake/store';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { proxyToLeader } from '../leader-proxy.js';
import { sendAdminPage, wantsPage } from './admin-ui-routes.js';
import type { Membership } from '../membership.js';
import type { TieringService } from '../tiering-service.js';
import './route-access.js';

export interface SearchRouteOptions {
  store: AuditStore;
  viewerMaxPage: number;
  membership: Membership;
  tiering: TieringService;
}

export const STALE_HEADER = 'x-auditlake-stale';

function wantsNdjson(accept: string | undefined): boolean {
  return accept !== undefined && accept.includes('application/x-ndjson');
}

/**
 * Streams matching events as NDJSON, one line each, never holding more than one event: the
 * socket's backpressure paces the LevelDB iterator, so `curl … | jq` works over any answer.
 */
async function streamNdjson(reply: FastifyReply, events: AsyncGenerator<StoredEvent>, limit: number, stale: boolean): Promise<void> {
  reply.hijack();
  const out = reply.raw;
  out.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8', ...(stale ? { [STALE_HEADER]: 'true' } : {}) });
  let sent = 0;
  try {
    for await (const event of events) {
      if (sent >= limit || out.destroyed) break;
      sent++;
      if (!out.write(JSON.stringify(toEventOutput(event)) + '\n')) await once(out, 'drain');
    }
  } finally {
    out.end();
  }
}

export function registerSearchRoute(app: FastifyInstance, options: SearchRouteOptions): void {
  app.get('/admin/audit', { config: { access: { role: 'admin', action: 'audit:Search', pageForBrowsers: true } } }, async (request, reply) => {
    if (wantsPage(request)) return sendAdminPage(reply);
    const filter: SearchFilter = parseSearchParams(request.query as Record<string, unknown>, options.viewerMaxPage);
    const { membership } = options;
    // A standby shows the leader's view; without a reachable leader, its own replica, marked stale.
    if (await proxyToLeader(membership.leaderUrl(), request, reply)) return reply;
    const stale = !membership.isLeader();
    if (stale) reply.header(STALE_HEADER, 'true');
    const tiers = await options.tiering.tierSources();
    if (tiers.length > 0) {
      // History has left for S3: one merged, de-duplicated page (at most the viewer's max page).
      const result = await mergedSearch({ local: options.store.search(filter), tiers, filter, localCompleteFromMs: options.tiering.localCompleteFromMs(Date.now()) });
      const events = result.events.map(toEventOutput);
      if (result.tierNote) reply.header('x-auditlake-tier-note', encodeURIComponent(result.tierNote));
      if (wantsNdjson(request.headers.accept)) {
        reply.header('content-type', 'application/x-ndjson; charset=utf-8');
        return events.map((e) => JSON.stringify(e) + '\n').join('');
      }
      return { events, count: events.length, truncated: result.truncated, ...(result.tierNote ? { tierNote: result.tierNote } : {}), ...(stale ? { stale: true } : {}) };
    }
    const events = options.store.search(filter);
    if (wantsNdjson(request.headers.accept)) return streamNdjson(reply, events, filter.limit, stale);
    const page: StoredEvent[] = [];
    let truncated = false;
    for await (const event of events) {
      if (page.length === filter.limit) {
        truncated = true;
        break;
      }
      page.push(event);
    }
    return { events: page.map(toEventOutput), count: page.length, truncated, ...(stale ? { stale: true } : {}) };
  });
}
