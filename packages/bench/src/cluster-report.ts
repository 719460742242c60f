import { RECOMMENDED_NODE_ENV } from '@auditlake/testkit';
import { DEFAULTS, type BenchConfig } from './bench-config.js';
import type { RunInfo, SummaryRow } from './bench-report.js';
import type { StepDown } from './bench-cluster.js';
import type { ClusterFigures } from './cluster-bench.js';
import type { FailoverTrial } from './cluster-failover-bench.js';
import type { ClusterThroughputResult } from './cluster-throughput-bench.js';
import type { LatencyStats } from './latency-stats.js';
import { cores, int, knobRow, metWord, ms, pct, sec, table } from './report-format.js';

/** The issue's targets ("2. Cluster"). */
export const CLUSTER_TARGETS = {
  throughputEventsPerSecondMin: 20_000,
  lagP99MsMax: 250,
} as const;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const defined = (values: Array<number | undefined>): number[] => values.filter((v): v is number => v !== undefined);

/** The single-node HTTP ingest figure, shown beside the cluster's for context. */
export interface SingleNodeContext {
  eventsPerSecond: number;
  /** Its process's CPU per event (µs), client worker included. */
  cpuMicrosPerEvent: number | undefined;
  /** False when the report kept it from an earlier run than the cluster figures. */
  sameRun: boolean;
}

export interface FailoverSummary {
  trials: number;
  firstAckMedianMs: number;
  firstAckMaxMs: number;
  leaderReadyMedianMs: number;
  leaderReadyMaxMs: number;
  viaLeaderMedianMs: number | undefined;
  viaStandbyMedianMs: number | undefined;
  viaStandbyMaxMs: number | undefined;
  preLeaderAckTrials: number;
  preLeaderAcks: number;
  preLeaderAcksUnreplicated: number;
}

export function failoverSummary(trials: readonly FailoverTrial[]): FailoverSummary {
  const firstAck = trials.map((t) => t.firstAckMs);
  const ready = trials.map((t) => t.leaderReadyMs);
  const viaLeader = defined(trials.map((t) => t.viaLeaderMs));
  const viaStandby = defined(trials.map((t) => t.viaStandbyMs));
  return {
    trials: trials.length,
    firstAckMedianMs: median(firstAck),
    firstAckMaxMs: Math.max(...firstAck),
    leaderReadyMedianMs: median(ready),
    leaderReadyMaxMs: Math.max(...ready),
    viaLeaderMedianMs: viaLeader.length > 0 ? median(viaLeader) : undefined,
    viaStandbyMedianMs: viaStandby.length > 0 ? median(viaStandby) : undefined,
    viaStandbyMaxMs: viaStandby.length > 0 ? Math.max(...viaStandby) : undefined,
    preLeaderAckTrials: trials.filter((t) => t.preLeaderAcks > 0).length,
    preLeaderAcks: trials.reduce((a, t) => a + t.preLeaderAcks, 0),
    preLeaderAcksUnreplicated: trials.reduce((a, t) => a + t.preLeaderAcksUnreplicated, 0),
  };
}

/** Cores the whole machine was busy with during a round: bench, nodes, Redis and everything else. */
function machineBusy(r: ClusterThroughputResult): number {
  return r.cpu.ownCores + Object.values(r.cpu.processes).reduce<number>((a, b) => a + (b ?? 0), 0) + (r.cpu.otherCores ?? 0);
}

export function clusterSummaryRows(c: ClusterFigures, config: BenchConfig, singleNode: SingleNodeContext | undefined): SummaryRow[] {
  const t = c.throughput;
  const f = failoverSummary(c.failover.trials);
  return [
    {
      figure:
        `cluster ingest, ${c.nodes} nodes, round robin, ${config.clusterBatchSize}-event batches, ${config.clusterConcurrency} in flight: ` +
        `acknowledged **and** applied on every node (best of ${c.throughputRounds.length})`,
      measured: `${int(t.eventsPerSecond)} events/s`,
      reference:
        `acked by the receiving node: ${int(t.ackedEventsPerSecond)} events/s` +
        (singleNode ? `; one node alone (Ingest below${singleNode.sameRun ? '' : ', another run'}): ${int(singleNode.eventsPerSecond)} events/s` : ''),
      target: `≥ ${int(CLUSTER_TARGETS.throughputEventsPerSecondMin)} events/s`,
      met: metWord(t.eventsPerSecond >= CLUSTER_TARGETS.throughputEventsPerSecondMin),
    },
    {
      figure: `replication lag at ${int(c.lag.offeredEventsPerSecond)} events/s to the leader: leader's 200 → applied on a standby, p99 (${int(c.lag.batches)} batches)`,
      measured: ms(c.lag.firstStandby.p99Ms),
      reference: `p50 ${ms(c.lag.firstStandby.p50Ms)}, max ${ms(c.lag.firstStandby.maxMs)}; on both standbys p99 ${ms(c.lag.allStandbys.p99Ms)}`,
      target: `p99 < ${CLUSTER_TARGETS.lagP99MsMax} ms`,
      met: metWord(c.lag.firstStandby.p99Ms < CLUSTER_TARGETS.lagP99MsMax),
    },
    {
      figure: `failover: \`kill -9\` of the leader → first \`ack=replicated\` write acknowledged (${f.trials} trials, lease TTL ${int(c.failover.leaseTtlMs)} ms)`,
      measured: `median ${sec(f.firstAckMedianMs)}, max ${sec(f.firstAckMaxMs)}`,
      reference: `new leader ready (its /health says leader): median ${sec(f.leaderReadyMedianMs)}, max ${sec(f.leaderReadyMaxMs)}`,
      target: `report (README: "within about two lease TTLs", ${sec(2 * c.failover.leaseTtlMs)})`,
      met: f.firstAckMaxMs <= 2 * c.failover.leaseTtlMs ? 'yes' : '**no**',
    },
    ...(c.catchUp === undefined
      ? []
      : [
          {
            figure: `catch-up: a standby that missed ${int(c.catchUp.events)} events restarts → holds every one (from the log, no ingest meanwhile)`,
            measured: `${sec(c.catchUp.caughtUpMs)} (${int(c.catchUp.eventsPerSecond)} events/s)`,
            reference: `process up after ${sec(c.catchUp.restartMs)}`,
            target: 'report only',
            met: '—',
          },
        ]),
  ];
}

export function clusterNotes(c: ClusterFigures, run: RunInfo, singleNode: SingleNodeContext | undefined): string[] {
  const out: string[] = [];
  const t = c.throughput;
  const cpuCount = run.machine.cpuCount;
  if (t.eventsPerSecond < CLUSTER_TARGETS.throughputEventsPerSecondMin) {
    const busy = machineBusy(t);
    const nodeSum = Object.entries(t.cpu.processes).reduce((a, [name, v]) => (name === 'redis' ? a : a + (v ?? 0)), 0);
    const nodeCores = Object.entries(t.cpu.processes)
      .filter(([name]) => name !== 'redis')
      .map(([name, v]) => `${name}${name === t.leader ? ' (leader)' : ''} ${cores(v)}`)
      .join(', ');
    out.push(
      `**Target missed:** the cluster took in ${int(t.eventsPerSecond)} events/s end to end, ${pct(t.eventsPerSecond / CLUSTER_TARGETS.throughputEventsPerSecondMin)} of the ` +
        `${int(CLUSTER_TARGETS.throughputEventsPerSecondMin)} events/s target, although the receiving nodes acknowledged ${int(t.ackedEventsPerSecond)} events/s: ` +
        `after the last 200 it took another ${sec(t.drainMs)} until every node had applied everything. ` +
        `In the best round the nodes used ${nodeCores} cores, the bench's client ${cores(t.cpu.ownCores)} and other work ${cores(t.cpu.otherCores)}: ` +
        `the machine's ${cpuCount} cores were ${pct(busy / cpuCount)} busy, so this is CPU-bound. The nodes spent ` +
        `${int((nodeSum * t.endToEndMs * 1000) / t.events)} µs of CPU per event together` +
        (singleNode?.cpuMicrosPerEvent === undefined ? '' : ` against ${int(singleNode.cpuMicrosPerEvent)} µs for one node alone (client included)`) +
        `: every event is stored three times (the leader and two standbys, each a synced LevelDB batch) and parsed by each node that stores it; ` +
        `the leader sends it to each standby (from the bytes it kept when it wrote them, or read back from LevelDB for a standby further behind), and the two thirds sent to a standby are also ` +
        `written to and deleted from its outbox and sent over HTTP once more. See "Where the time goes" under Cluster.`,
    );
  }
  if (c.lag.firstStandby.p99Ms >= CLUSTER_TARGETS.lagP99MsMax) {
    const lag = c.lag;
    const nodeCores = Object.entries(lag.cpu.processes).reduce((a, [name, v]) => (name === 'redis' ? a : a + (v ?? 0)), 0);
    const busy = lag.cpu.ownCores + nodeCores + (lag.cpu.otherCores ?? 0);
    const readCost = lag.pollCost ? Object.values(lag.pollCost.standbyCores).reduce<number>((a, v) => a + (v ?? 0), 0) + lag.pollCost.benchCores : 0;
    out.push(
      `**Target missed:** replication lag p99 is ${ms(lag.firstStandby.p99Ms)} (target < ${CLUSTER_TARGETS.lagP99MsMax} ms; p50 ${ms(lag.firstStandby.p50Ms)}). ` +
        `At ${int(lag.offeredEventsPerSecond)} events/s the three nodes used ${cores(nodeCores)} cores, the bench ${cores(lag.cpu.ownCores)} and other work ` +
        `${cores(lag.cpu.otherCores)}: the machine's ${cpuCount} cores were ${pct(busy / cpuCount)} busy, so requests queue (the leader's own ingest answer ` +
        `has p99 ${ms(lag.ingestLatency.p99Ms)}). The bench's ${run.config.lagPollMs} ms reads of the standbys are part of that load (about ${cores(readCost)} cores measured on the idle cluster).`,
    );
  }
  if (c.lag.achievedEventsPerSecond < c.lag.offeredEventsPerSecond * 0.95) {
    out.push(`The lag run offered only ${int(c.lag.achievedEventsPerSecond)} of the scheduled ${int(c.lag.offeredEventsPerSecond)} events/s (the sender fell behind its schedule).`);
  }
  const runs: Array<{ name: string; termBefore: number; termAfter: number; stepDowns: StepDown[] }> = [
    ...c.throughputRounds.map((r, i) => ({ name: `throughput round ${i + 1}`, ...r })),
    { name: 'the lag run', ...c.lag },
  ];
  const moved = runs.filter((r) => r.termBefore !== r.termAfter || r.stepDowns.length > 0);
  if (moved.length > 0) {
    out.push(
      `**Leadership changed under load**, with no node killed: ${moved
        .map((r) => `in ${r.name} the term went ${r.termBefore} → ${r.termAfter} with ${r.stepDowns.length} step-down(s)${reasons(r.stepDowns)}`)
        .join('; ')}. ` +
        `A leader whose event loop or CPU share is starved cannot renew its ${int(c.failover.leaseTtlMs)} ms lease in time (Redis commands time out after ` +
        `${int(c.failover.leaseTtlMs / 3)} ms) and steps down; those figures include the elections that followed.`,
    );
  }
  const f = failoverSummary(c.failover.trials);
  if (f.firstAckMaxMs > 2 * c.failover.leaseTtlMs) {
    out.push(
      `**Failover slower than the README's promise:** the slowest of ${f.trials} trials took ${sec(f.firstAckMaxMs)} to the first replicated write ` +
        `(README: "within about two lease TTLs", ${sec(2 * c.failover.leaseTtlMs)}).`,
    );
  }
  if (f.preLeaderAcksUnreplicated > 0) {
    out.push(
      `**ack=replicated answered without a standby:** in the failover trials, ${int(f.preLeaderAcksUnreplicated)} writes the future leader had ` +
        `received while still a standby were answered 200 while the surviving standby provably did not have them yet (a read of its applied seq ` +
        `that started after the 200 arrived was still below the event's seq). Such answers are not counted in the failover figure (see Failover).`,
    );
  }
  return out;
}

/** " (reason ×n, …)" from the nodes' step-down log lines. */
function reasons(stepDowns: readonly StepDown[]): string {
  if (stepDowns.length === 0) return '';
  const counts = new Map<string, number>();
  for (const d of stepDowns) {
    // Error texts carry varying details after a colon; group by the stable part.
    const key = d.reason.split(':')[0] ?? d.reason;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return ` (${[...counts].map(([reason, n]) => `"${reason}" ×${n}`).join(', ')})`;
}

function statsRow(name: string, s: LatencyStats): string[] {
  return [name, int(s.count), ms(s.p50Ms), ms(s.p95Ms), ms(s.p99Ms), ms(s.maxMs), ms(s.meanMs)];
}

function routeCell(r: ClusterThroughputResult, node: string, route: string): string {
  const x = r.nodes[node]?.routes[route];
  return x === undefined ? '—' : `${int(x.count)} × ${ms((x.seconds / x.count) * 1000)}`;
}

export function clusterMarkdown(c: ClusterFigures, config: BenchConfig, singleNode: SingleNodeContext | undefined, cpuCount: number): string {
  const t = c.throughput;
  const lag = c.lag;
  const f = failoverSummary(c.failover.trials);
  const nodeNames = Object.keys(t.nodeAppliedMs);
  const standbyNames = nodeNames.filter((n) => n !== t.leader);
  const parts: string[] = [];
  parts.push(
    '## Cluster',
    '',
    `${c.nodes} real \`auditlake start --coordinator redis://…\` processes (the built CLI, default configuration: lease TTL ${int(c.failover.leaseTtlMs)} ms, ` +
      `synced writes, \`--log-level warn\`, and the environment README.md recommends: ` +
      `${Object.entries(RECOMMENDED_NODE_ENV).map(([k, v]) => `\`${k}=${v}\``).join(', ')}) and one real \`redis-server\` (no persistence), all on 127.0.0.1, started with testkit's ` +
      `\`startRedis\` and \`startNodeProcess\` on temp data dirs. Each of the three measurements below starts its own fresh cluster and stops ` +
      `it (processes killed, Redis stopped, data dirs removed) afterwards, also on failure or Ctrl-C. "Applied seq" is what a node's own ` +
      `\`GET /admin/cluster\` reports for itself: its store's last seq, i.e. the log up to there is on its disk. Seqs have no gaps, so ` +
      `"a node has applied seq s" means it holds every event of seq ≤ s. Per-process CPU is read from /proc/<pid>/stat; "other CPU" ` +
      `is the machine's busy time (/proc/stat) minus the bench, the nodes and Redis — work that is not part of the benchmark.`,
    '',
    '### Throughput: acknowledged and on every node',
    '',
    `A client in a worker thread posts ${int(config.clusterBatchSize)}-event batches of generated events (no eventIds, so the receiving node ` +
      `assigns them) to \`POST /v1/api/audit\`, batch i to node i mod ${c.nodes} (round robin over all nodes, leader and standbys), ` +
      `${config.clusterConcurrency} requests in flight over keep-alive connections, bodies serialised before timing. A standby stores what it ` +
      `receives in its outbox (synced) and answers 200, then forwards it to the leader, which orders and stores it and streams it to the standbys. ` +
      `${int(config.clusterWarmupEvents)} warm-up events go first and the bench waits until every node has applied them. The clock starts at the first ` +
      `measured request and stops when **every node's applied seq has reached the seq before the round plus the events sent** — every ` +
      `acknowledged event is then on all ${c.nodes} nodes — read by polling each node's \`/admin/cluster\` every ${t.pollMs ?? 5} ms once the last ` +
      `request was answered. Afterwards the bench reads every node's log back through \`POST /internal/v1/pull\` (catch-up mode) and checks that ` +
      `all nodes hold the same (seq, eventId) sequence with no eventId twice and nothing missing; a round that fails this check fails the run. ` +
      `The rounds run one after the other on one cluster; the best (bold) is the reported figure.`,
    '',
    table(
      ['round', 'events', 'all acked after', 'acked events/s', 'on every node after', '**events/s end to end**', 'last 200 → on every node', 'leader (term before → after; step-downs)', 'CPU cores: bench / leader / standbys / Redis', 'other CPU (cores)'],
      c.throughputRounds.map((r, i) => {
        const standbyCores = Object.entries(r.cpu.processes)
          .filter(([n]) => n !== 'redis' && n !== r.leader)
          .map(([, v]) => cores(v))
          .join(' + ');
        const row = [
          String(i + 1),
          int(r.events),
          sec(r.ackedMs),
          int(r.ackedEventsPerSecond),
          sec(r.endToEndMs),
          int(r.eventsPerSecond),
          sec(r.drainMs),
          `${r.leader} (${r.termBefore} → ${r.termAfter}; ${r.stepDowns.length})`,
          `${cores(r.cpu.ownCores)} / ${cores(r.cpu.processes[r.leader])} / ${standbyCores} / ${cores(r.cpu.processes['redis'])}`,
          cores(r.cpu.otherCores),
        ];
        return r === t ? row.map((cell) => `**${cell}**`) : row;
      }),
    ),
    '',
    `Best round: every node had applied everything at ${nodeNames.map((n) => `${n}${n === t.leader ? ' (leader)' : ''} ${sec(t.nodeAppliedMs[n] ?? Number.NaN)}`).join(', ')} ` +
      `after the first request. Per request (send → 200, ${int(t.requests)} requests): p50 ${ms(t.requestLatency.p50Ms)}, p99 ${ms(t.requestLatency.p99Ms)}, ` +
      `max ${ms(t.requestLatency.maxMs)}. Logs checked: ${int(t.verified.logLength)} entries on each node (earlier rounds included), ` +
      `${int(t.verified.uniqueEventIds)} distinct eventIds, identical on all nodes: ${t.verified.identicalOnAllNodes ? 'yes' : '**no**'}.` +
      (singleNode ? ` For context, one node alone (in-process, Ingest above${singleNode.sameRun ? ', same run' : ', measured in another run'}) took ${int(singleNode.eventsPerSecond)} events/s.` : ''),
    '',
    '#### Where the time goes (best round)',
    '',
    `Server-side time per request, from each node's \`auditlake_http_request_duration_seconds\` histogram over the measured interval ` +
      `(count × mean; a pull is a long poll, so its time includes waiting for new entries), and the node's event counters:`,
    '',
    table(
      ['node', 'role', 'client ingest `POST /v1/api/audit`', 'forwards received `POST /internal/v1/forward`', 'pulls served `POST /internal/v1/pull`', 'events stored from clients / queued in outbox / forwarded', 'CPU (cores)'],
      nodeNames.map((n) => {
        const counters = t.nodes[n]?.counters ?? {};
        return [
          n,
          n === t.leader ? 'leader' : 'standby',
          routeCell(t, n, 'POST /v1/api/audit'),
          routeCell(t, n, 'POST /internal/v1/forward'),
          routeCell(t, n, 'POST /internal/v1/pull'),
          `${int(counters['events_ingested_total'] ?? 0)} / ${int(counters['events_queued_total'] ?? 0)} / ${int(counters['events_forwarded_total'] ?? 0)}`,
          cores(t.cpu.processes[n]),
        ];
      }),
    ),
    '',
  );
  const usPerEvent = (coresUsed: number | undefined) => (coresUsed === undefined ? 'n/a' : `${int((coresUsed * t.endToEndMs * 1000) / t.events)} µs`);
  const nodeCoreSum = nodeNames.reduce((a, n) => a + (t.cpu.processes[n] ?? 0), 0);
  parts.push(
    `CPU per event over the best round (cores × time ÷ events): all nodes together ${usPerEvent(nodeCoreSum)}, the leader ${usPerEvent(t.cpu.processes[t.leader])}, ` +
      `${standbyNames.map((n) => `${n} ${usPerEvent(t.cpu.processes[n])}`).join(', ')}` +
      (singleNode?.cpuMicrosPerEvent === undefined ? '.' : `; one node alone spent ${int(singleNode.cpuMicrosPerEvent)} µs per event (Ingest, its client worker included).`) +
      ` At the nodes' rate of CPU per event, ${cpuCount} fully available cores would carry about ${int(
        (cpuCount * 1_000_000) / Math.max(1, (nodeCoreSum * t.endToEndMs * 1000) / t.events),
      )} events/s end to end.`,
    '',
  );
  const forwards = t.nodes[t.leader]?.routes['POST /internal/v1/forward'];
  const forwarded = standbyNames.reduce((a, n) => a + (t.nodes[n]?.counters['events_forwarded_total'] ?? 0), 0);
  if (forwards && forwards.count > 0) {
    parts.push(
      `The leader received ${int(forwards.count)} forwards carrying ${int(forwarded / forwards.count)} events each on average, ` +
        `${ms((forwards.seconds / forwards.count) * 1000)} of server time per forward (${int(forwarded / forwards.seconds)} events per second of forward handling). ` +
        `Each standby forwards one batch at a time and waits for the answer before the next, so forwarding is a serial pipe per standby.`,
      '',
    );
  }

  parts.push(
    '### Replication lag',
    '',
    `A paced, open-loop sender (a slow answer does not delay the next send) posts ${int(lag.offeredEventsPerSecond / config.lagBatchSize)} requests/s × ` +
      `${int(config.lagBatchSize)} generated events = ${int(lag.offeredEventsPerSecond)} events/s to the leader for ${config.lagSeconds} s, after 3 s ` +
      `of unreported warm-up at the same rate. Every event carries a known eventId. Meanwhile the bench reads each standby's own ` +
      `\`GET /admin/cluster\` every ${config.lagPollMs} ms (one read in flight per standby), recording when each answer arrived and the applied seq in it. ` +
      `After the run the leader's log (internal pull) maps every eventId to its seq, so each batch's highest seq is known exactly; a batch's lag is ` +
      `**the arrival of the first read showing that seq on a standby minus the arrival of the leader's 200**. A standby applies in seq order, so ` +
      `then it holds the whole batch. The time is an upper bound: the standby applied the batch after the previous read started and before this ` +
      `read answered, so a figure overstates the true lag by at most one gap between reads (median read round trip ` +
      `${ms(lag.pollRoundTrip.p50Ms)}, p99 ${ms(lag.pollRoundTrip.p99Ms)}; ${int(lag.polls)} reads; the largest gap ${ms(lag.pollGapMaxMs)}). ` +
      `Everything runs in the bench's main thread on one clock. Leader ${lag.leader}, standbys ${lag.standbys.join(' and ')}. ` +
      `Why not read more often: each read costs a node roughly a millisecond of CPU here, and reading every 5 ms cost the two idle standbys ` +
      `and the bench about 0.8 of this machine's 2 cores together (run of 2026-11-29T21:13Z), which starved replication and inflated the lag it measured.`,
    '',
    table(
      ['measure (per batch)', 'batches', 'p50', 'p95', 'p99', 'max', 'mean'],
      [
        statsRow("**leader's 200 → applied on the first standby** (what `ack=replicated` waits for)", lag.firstStandby).map((cell, i) => (i === 0 ? cell : `**${cell}**`)),
        statsRow("leader's 200 → applied on both standbys", lag.allStandbys),
        ...Object.entries(lag.perStandby).map(([n, s]) => statsRow(`leader's 200 → applied on ${n}`, s)),
        statsRow('leader ingest request, send → 200 (context)', lag.ingestLatency),
        statsRow('sender: actual send − scheduled send (context)', lag.sendSlipMs),
      ],
    ),
    '',
    `Offered ${int(lag.offeredEventsPerSecond)} events/s, sent ${int(lag.achievedEventsPerSecond)} events/s (${int(lag.events)} events). ` +
      (lag.pollCost
        ? `The reads are not free: on the idle cluster just before the run, being read every ${config.lagPollMs} ms cost ` +
          `${Object.entries(lag.pollCost.standbyCores).map(([n, v]) => `${n} ${cores(v)}`).join(' and ')} cores and the bench ${cores(lag.pollCost.benchCores)} cores ` +
          `(${lag.pollCost.seconds} s, no ingest), load this run carries on top of replication. `
        : '') +
      `Term ${lag.termBefore} → ${lag.termAfter}, ${lag.stepDowns.length} leader step-down(s)${reasons(lag.stepDowns)}. ` +
      `CPU over the run: bench ${cores(lag.cpu.ownCores)}, ${Object.entries(lag.cpu.processes).map(([n, v]) => `${n}${n === lag.leader ? ' (leader)' : ''} ${cores(v)}`).join(', ')}, ` +
      `other ${cores(lag.cpu.otherCores)} cores.`,
    '',
    '### Failover',
    '',
    `${f.trials} trials on one cluster. Each waits until all ${c.nodes} nodes agree on the leader and have applied the same seq, checks that an ` +
      `\`ack=replicated\` write succeeds, then sends the leader \`SIGKILL\` (\`kill -9\`). From that instant a probe write (one event, fresh eventId) ` +
      `\`POST /v1/api/audit?ack=replicated\` starts every ${config.failoverProbeMs} ms, alternating between the two survivors, each left in flight until ` +
      `answered (a node answers 503 after \`auditlake.ingest.ack.replicated.timeout.ms\`, 5000). The survivors' \`/health\` is read every ${c.failover.pollMs ?? 10} ms to see ` +
      `when one says \`role: leader\` (it says so only once it has caught up and may order writes). A 200 counts when it proves that a new leader ` +
      `stored the event and a standby applied it: **from the surviving standby** (it answers 200 only when the event has come back to it through ` +
      `replication) or **from the new leader for a probe sent after its /health said leader** (it stored the event in its log and waited for a ` +
      `standby to apply it). The figure is the earlier of the two, measured as the arrival of that 200 after the kill. ` +
      `Then the killed node is restarted on its data dir and port, and the next trial waits until it has caught up.`,
    '',
    table(
      ['trial', 'killed', 'new leader', 'term', 'new leader ready', 'first ack via new leader', 'first ack via standby', '**first replicated ack**', 'probes (503s)', 'early acks (see below)', 'restart → caught up'],
      c.failover.trials.map((tr) => [
        String(tr.trial),
        tr.killed,
        tr.newLeader,
        `${tr.termBefore} → ${tr.termAfter}`,
        sec(tr.leaderReadyMs),
        sec(tr.viaLeaderMs),
        sec(tr.viaStandbyMs),
        `**${sec(tr.firstAckMs)}**`,
        `${int(tr.probes)} (${int(tr.probes503)})`,
        tr.preLeaderAcks === 0 ? '0' : `${int(tr.preLeaderAcks)} (${int(tr.preLeaderAcksUnreplicated)} proven early), first at ${sec(tr.preLeaderFirstAckMs)}`,
        sec(tr.rejoinMs),
      ]),
    ),
    '',
    `Kill → first replicated write acknowledged: **median ${sec(f.firstAckMedianMs)}, max ${sec(f.firstAckMaxMs)}**. Kill → new leader ready: ` +
      `median ${sec(f.leaderReadyMedianMs)}, max ${sec(f.leaderReadyMaxMs)}. Via the new leader: median ${sec(f.viaLeaderMedianMs)}; via the ` +
      `surviving standby: median ${sec(f.viaStandbyMedianMs)}, max ${sec(f.viaStandbyMaxMs)}. ` +
      `The lease outlives the dead leader by up to ${sec(c.failover.leaseTtlMs)} (it was last renewed up to ${sec(c.failover.leaseTtlMs / 3)} before ` +
      `the kill), a standby looks at the lease every ${sec(c.failover.leaseTtlMs / 3)}, the winner first catches up from its peers, and the other ` +
      `standby learns of the new leader at its next look too; a standby's forwarder that failed against the dead leader backs off (doubling ` +
      `from 100 ms to 5 s), which is what delays acknowledgements via the standby.`,
    '',
    `"Early acks" are probes the future leader received while it was still a standby and answered 200. Such a probe waits in the node's ` +
      `outbox until its events are in the node's log; when the node itself becomes the leader, it orders its own outbox, so whether the 200 ` +
      `also waited for a standby depends on the code (before commit 4ff5954 it did not). They are not counted in the figure; the bench checks ` +
      `each against the surviving standby instead: "proven early" means the event's seq (from the new leader's log) was still above the ` +
      `standby's applied seq in a read that started after the 200 arrived (each survivor's \`/admin/cluster\` is read every ${c.failover.pollMs ?? 10} ms during a trial).`,
  );
  if (c.catchUp !== undefined) {
    const k = c.catchUp;
    parts.push(
      '',
      '### Catch-up of a standby far behind',
      '',
      `On its own fresh cluster: a standby (${k.standby}; the leader was ${k.leader}) is killed, the two live nodes take ${int(k.events)} events round robin ` +
        `as in the throughput run, and once both have applied them the standby is started again on its data dir. It catches up from its applied seq ` +
        `by pulling the leader's log, beyond the leader's in-memory log tail (read from LevelDB); there is no separate store snapshot. ` +
        `Nothing is ingested meanwhile. Its process answered \`/health\` ${sec(k.restartMs)} after the restart began, and its applied seq (read every ` +
        `${int(k.pollMs)} ms) reached the leader's **${sec(k.caughtUpMs)}** after it: ${int(k.eventsPerSecond)} events/s from the moment it was up.`,
    );
  }
  return parts.join('\n');
}

export function clusterKnobRows(config: BenchConfig | undefined): string[][] {
  return [
    knobRow('BENCH_CLUSTER_EVENTS', config?.clusterEvents, DEFAULTS.clusterEvents),
    knobRow('BENCH_CLUSTER_WARMUP_EVENTS', config?.clusterWarmupEvents, DEFAULTS.clusterWarmupEvents),
    knobRow('BENCH_CLUSTER_BATCH', config?.clusterBatchSize, DEFAULTS.clusterBatchSize),
    knobRow('BENCH_CLUSTER_CONCURRENCY', config?.clusterConcurrency, DEFAULTS.clusterConcurrency),
    knobRow('BENCH_CLUSTER_ROUNDS', config?.clusterRounds, DEFAULTS.clusterRounds),
    knobRow('BENCH_CATCHUP_EVENTS', config?.catchUpEvents, DEFAULTS.catchUpEvents),
    knobRow('BENCH_LAG_RATE (events/s)', config?.lagEventsPerSecond, DEFAULTS.lagEventsPerSecond),
    knobRow('BENCH_LAG_BATCH', config?.lagBatchSize, DEFAULTS.lagBatchSize),
    knobRow('BENCH_LAG_SECONDS', config?.lagSeconds, DEFAULTS.lagSeconds),
    knobRow('BENCH_LAG_POLL_MS', config?.lagPollMs, DEFAULTS.lagPollMs),
    knobRow('BENCH_FAILOVER_TRIALS', config?.failoverTrials, DEFAULTS.failoverTrials),
    knobRow('BENCH_FAILOVER_PROBE_MS', config?.failoverProbeMs, DEFAULTS.failoverProbeMs),
  ];
}
