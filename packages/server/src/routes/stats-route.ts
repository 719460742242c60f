import { summarizeEvents } from '@auditlake/model';
import type { FastifyInstance } from 'fastify';
import type { AuditSearch } from '../audit-search.js';
import { PROXY_TIMEOUT_MS, proxyToLeader } from '../leader-proxy.js';
import type { Membership } from '../membership.js';
import { searchDeadline } from '../search-deadline.js';
import { searchFilter } from './search-route.js';
import './route-access.js';

/**
 * `GET /admin/audit/stats`: the Overview's counters, top lists, graph edges and ALLOW/DENY
 * histogram over the window a search with the same parameters returns (the newest `limit`
 * matching events), so a browser draws it without downloading thousands of events.
 */
export function registerStatsRoute(app: FastifyInstance, options: { search: AuditSearch; viewerMaxPage: number; membership: Membership; searchTimeoutMs: number }): void {
  app.get('/admin/audit/stats', { config: { access: { role: 'admin', action: 'audit:ReadStats' } } }, async (request, reply) => {
    const filter = searchFilter(request.query, options.viewerMaxPage);
    const { membership } = options;
    // The leader's search may read up to its own deadline before answering.
    if (await proxyToLeader(membership.leaderUrl(), request, reply, { timeoutMs: options.searchTimeoutMs + PROXY_TIMEOUT_MS })) return reply;
    const stale = !membership.isLeader();
    const deadline = searchDeadline(reply, options.searchTimeoutMs);
    const page = await options.search.page(filter, deadline.signal).finally(() => deadline.done());
    const stats = summarizeEvents(page.events, {
      ...(filter.fromMs !== undefined ? { fromMs: filter.fromMs } : {}),
      ...(filter.toMs !== undefined ? { toMs: filter.toMs } : {}),
      nowMs: Date.now(),
      limit: filter.limit,
      truncated: page.truncated,
    });
    return { ...stats, ...(page.tierNote ? { tierNote: page.tierNote } : {}), ...(stale ? { stale: true } : {}) };
  });
}
