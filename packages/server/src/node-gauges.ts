import { Gauge, type Registry } from 'prom-client';
import type { ClusterMemberStatus } from '@auditlake/cluster';
import type { PrunedIdsFigures } from '@auditlake/store';
import type { Membership } from './membership.js';
import type { TierStatusView } from './tiering-service.js';

/**
 * Gauges read when Prometheus scrapes: the tiering sweep's health (backlog, watermark, last
 * success and failure) and this node's place in the cluster (leader, term, each standby's
 * lag as this node sees it). Read at scrape time, so they are never stale and cost nothing
 * between scrapes.
 */
export function registerNodeGauges(registry: Registry, sources: { tierStatus: () => Promise<TierStatusView>; membership: Membership; prunedIds: () => PrunedIdsFigures }): void {
  const registers = [registry];
  new Gauge({
    name: 'auditlake_pruned_ids_kept',
    help: 'EventIds of tiered events retention deleted that this node keeps, so a re-send under one is judged against the tier (auditlake.ingest.resend.ids.keep.days)',
    registers,
    collect() {
      this.set(sources.prunedIds().ids);
    },
  });
  new Gauge({
    name: 'auditlake_pruned_ids_filter_bytes',
    help: 'Memory the Bloom filter of the kept ids takes',
    registers,
    collect() {
      this.set(sources.prunedIds().filterBytes);
    },
  });
  new Gauge({
    name: 'auditlake_pruned_ids_filter_full',
    help: '1 while the Bloom filter of the kept ids is at its memory bound (512 MiB): ingest reads the id of every client-chosen event; a shorter auditlake.ingest.resend.ids.keep.days keeps fewer ids',
    registers,
    collect() {
      this.set(sources.prunedIds().filterFull ? 1 : 0);
    },
  });
  new Gauge({
    name: 'auditlake_pruned_ids_filling',
    help: '1 until the kept ids were all read after start (ingest reads the id of every client-chosen event meanwhile), else 0',
    registers,
    collect() {
      this.set(sources.prunedIds().filling ? 1 : 0);
    },
  });
  // One status read per scrape, shared by the tier gauges (each collect() runs in the same scrape).
  let pending: Promise<TierStatusView> | undefined;
  const tierStatus = () => {
    pending ??= sources.tierStatus().finally(() => {
      setImmediate(() => (pending = undefined));
    });
    return pending;
  };
  let clusterPending: ReturnType<Membership['status']> | undefined;
  const clusterStatus = () => {
    clusterPending ??= sources.membership.status().finally(() => {
      setImmediate(() => (clusterPending = undefined));
    });
    return clusterPending.catch(() => undefined);
  };
  const seconds = (ms: number) => (ms > 0 ? ms / 1000 : 0);
  new Gauge({
    name: 'auditlake_tier_backlog_events',
    help: 'Events not yet tiered (after the watermark)',
    registers,
    async collect() {
      this.set((await tierStatus()).backlog);
    },
  });
  new Gauge({
    name: 'auditlake_tier_watermark_seq',
    help: 'Seq of the last tiered event (the tiering watermark)',
    registers,
    async collect() {
      this.set((await tierStatus()).watermark.seq);
    },
  });
  new Gauge({
    name: 'auditlake_tier_watermark_ingest_timestamp_seconds',
    help: 'Ingest time of the last tiered event, Unix seconds (0: nothing tiered)',
    registers,
    async collect() {
      this.set(seconds((await tierStatus()).watermark.ingestTs));
    },
  });
  new Gauge({
    name: 'auditlake_tier_last_success_timestamp_seconds',
    help: 'When a tiering sweep last succeeded, Unix seconds (0: never)',
    registers,
    async collect() {
      this.set(seconds((await tierStatus()).lastSuccessMs));
    },
  });
  new Gauge({
    name: 'auditlake_tier_last_failure_timestamp_seconds',
    help: 'When a tiering sweep last failed, Unix seconds (0: never)',
    registers,
    async collect() {
      this.set(seconds((await tierStatus()).lastFailureMs));
    },
  });
  new Gauge({
    name: 'auditlake_cluster_leader',
    help: '1 while this node is the leader, else 0',
    registers,
    collect() {
      this.set(sources.membership.isLeader() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'auditlake_cluster_term',
    help: 'The leadership term this node knows',
    registers,
    collect() {
      this.set(sources.membership.term());
    },
  });
  new Gauge({
    name: 'auditlake_replication_lag_seconds',
    help: "How far each node's applied log is behind the leader's, as this node sees it",
    labelNames: ['node'] as const,
    registers,
    async collect() {
      this.reset();
      const status = await clusterStatus();
      for (const node of status?.nodes ?? []) {
        if (typeof node.lagMs === 'number') this.set({ node: node.nodeId }, node.lagMs / 1000);
      }
    },
  });
  // Each node this one has heard from, as /admin/cluster lists them (a dead node stays listed).
  const perNode = (name: string, help: string, value: (node: ClusterMemberStatus) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['node'] as const,
      registers,
      async collect() {
        this.reset();
        for (const node of (await clusterStatus())?.nodes ?? []) this.set({ node: node.nodeId }, value(node));
      },
    });
  perNode('auditlake_cluster_node_applied_seq', "Where each node's log ends, as this node last heard (itself included)", (n) => n.appliedSeq);
  perNode('auditlake_cluster_node_reachable', '1 when the node was heard from within a lease TTL, else 0', (n) => (n.role === 'unreachable' ? 0 : 1));
  perNode('auditlake_cluster_node_last_heard_seconds', 'Seconds since each node was last heard from (0 for this node)', (n) => n.lastHeardMs / 1000);
}
