import type { BenchCluster } from './bench-cluster.js';
import { absoluteNowMs, sleep } from './clock.js';
import { httpRequest, keepAliveAgent } from './http-client.js';
import { provenMissingAt, startSeqPoller } from './seq-poller.js';

export interface ClusterFailoverOptions {
  trials: number;
  /** A new probe write starts this often, alternating between the two surviving nodes. */
  probeIntervalMs: number;
  /** How often each survivor's /health is read (when it first says role=leader). */
  healthPollMs: number;
  /** Give up on a trial after this long without a qualifying acknowledgement. */
  trialTimeoutMs: number;
  log: (message: string) => void;
}

export interface FailoverTrial {
  trial: number;
  killed: string;
  newLeader: string;
  termBefore: number;
  termAfter: number;
  /** kill -9 → first /health answer role=leader from a survivor (upper bound: arrival of that answer). */
  leaderReadyMs: number;
  /** kill -9 → first 200 to an ack=replicated probe sent to the new leader after it said role=leader. */
  viaLeaderMs: number | undefined;
  /** kill -9 → first 200 to an ack=replicated probe sent to the surviving standby. */
  viaStandbyMs: number | undefined;
  /** The figure: the earlier of the two. */
  firstAckMs: number;
  /** Probes sent to the future leader before it led that were nonetheless answered 200 (see the report). */
  preLeaderAcks: number;
  /** kill -9 → earliest such 200, if any. */
  preLeaderFirstAckMs: number | undefined;
  /**
   * Of those, answered while the surviving standby provably had not applied the event yet (a read
   * of its applied seq that started after the 200 arrived still showed it below the event's seq).
   */
  preLeaderAcksUnreplicated: number;
  probes: number;
  /** Probes answered 503 (not confirmed within the node's ack.replicated timeout). */
  probes503: number;
  /** Restart of the killed node → it has applied everything and follows the new leader. */
  rejoinMs: number;
}

export interface ClusterFailoverResult {
  trials: FailoverTrial[];
  leaseTtlMs: number;
  /** How often the survivors' /health and applied seq were read (absent in older stored figures: 10). */
  pollMs?: number | undefined;
}

interface Probe {
  target: number;
  eventId: string;
  sentAt: number;
  answeredAt: number | undefined;
  status: number | undefined;
}

/**
 * kill -9 of the leader, `trials` times. Right after the kill a probe write (one event, a fresh
 * eventId) starts every `probeIntervalMs`, alternating between the two survivors, each
 * `POST /v1/api/audit?ack=replicated` and left in flight until answered (open loop, so one slow
 * answer does not hide a later fast one). A 200 counts when it proves a new leader stored the
 * event and a standby applied it:
 *  - a probe to the surviving standby: that node answers 200 only once the event came back to
 *    it through replication from a leader;
 *  - a probe to the new leader sent after its /health said role=leader: it stored the event in
 *    its log and waited for a standby to apply it.
 * A probe the future leader received before it led goes to its outbox, and the node answers 200
 * once the event is in its own log — which it put there itself on becoming leader, before any
 * standby has it; such answers are counted separately and not used.
 * Between trials the killed node is restarted on its data dir and the cluster must settle.
 */
export async function runClusterFailoverBench(cluster: BenchCluster, options: ClusterFailoverOptions): Promise<ClusterFailoverResult> {
  const agent = keepAliveAgent(512);
  const headers = { authorization: `Token ${cluster.ingestToken}`, 'content-type': 'application/json' };
  const trials: FailoverTrial[] = [];
  try {
    for (let trial = 1; trial <= options.trials; trial++) {
      const before = await cluster.waitForSteady(120_000);
      // A replicated write must work before the kill: the cluster is whole, not still joining.
      const warm = await httpRequest(agent, new URL('/v1/api/audit?ack=replicated', cluster.url(before.leader)), {
        method: 'POST',
        headers,
        body: Buffer.from(JSON.stringify([{ source: 'bench', userId: 'bench', action: 'data:Insert', tables: ['bench.failover'], eventId: `bench-fo-${Date.now()}-pre${trial}` }])),
        timeoutMs: 15_000,
      });
      if (warm.status !== 200) throw new Error(`a replicated write before trial ${trial} answered ${warm.status}: ${warm.body.toString('utf8').slice(0, 300)}`);
      await cluster.waitForSteady(30_000);
      const killed = before.leader;
      const survivors = Array.from({ length: cluster.size }, (_, i) => i).filter((i) => i !== killed);

      // Who says role=leader first, and when.
      const leaderSeen = new Map<number, number>();
      let watching = true;
      const watchers = survivors.map(async (i) => {
        while (watching && !leaderSeen.has(i)) {
          const sentAt = absoluteNowMs();
          if ((await cluster.role(i, 500)) === 'leader') leaderSeen.set(i, absoluteNowMs());
          await sleep(options.healthPollMs - (absoluteNowMs() - sentAt));
        }
      });

      const probes: Probe[] = [];
      const pending: Array<Promise<void>> = [];
      // Each survivor's applied seq, to tell whether the standby had an acknowledged event yet.
      const seqPollers = new Map(survivors.map((i) => [i, startSeqPoller(() => cluster.appliedSeq(i, 1000), options.healthPollMs)]));
      const killedAt = absoluteNowMs();
      const qualifying = (): { viaLeader: number | undefined; viaStandby: number | undefined } => {
        let viaLeader: number | undefined;
        let viaStandby: number | undefined;
        const leader = [...leaderSeen.keys()][0];
        for (const p of probes) {
          if (p.status !== 200 || p.answeredAt === undefined) continue;
          if (leader !== undefined && p.target === leader) {
            const readyAt = leaderSeen.get(leader) as number;
            if (p.sentAt >= readyAt && (viaLeader === undefined || p.answeredAt < viaLeader)) viaLeader = p.answeredAt;
          } else if (leader !== undefined && p.target !== leader) {
            if (viaStandby === undefined || p.answeredAt < viaStandby) viaStandby = p.answeredAt;
          }
        }
        return { viaLeader, viaStandby };
      };
      try {
        await cluster.kill(killed);
        options.log(`  trial ${trial}/${options.trials}: killed leader node${killed} (term ${before.term})`);

        let n = 0;
        const deadline = killedAt + options.trialTimeoutMs;
        for (;;) {
          const got = qualifying();
          if (got.viaLeader !== undefined && got.viaStandby !== undefined) break;
          if (absoluteNowMs() > deadline) break;
          const target = survivors[n % survivors.length] as number;
          const eventId = `bench-fo-${Math.round(killedAt)}-${trial}-${n}`;
          const probe: Probe = { target, eventId, sentAt: absoluteNowMs(), answeredAt: undefined, status: undefined };
          probes.push(probe);
          const body = Buffer.from(JSON.stringify([{ source: 'bench', userId: 'bench', action: 'data:Insert', tables: ['bench.failover'], eventId }]));
          n++;
          pending.push(
            httpRequest(agent, new URL('/v1/api/audit?ack=replicated', cluster.urlOf(target)), { method: 'POST', headers, body, timeoutMs: 20_000 }).then(
              (res) => {
                probe.answeredAt = absoluteNowMs();
                probe.status = res.status;
              },
              () => {
                probe.answeredAt = absoluteNowMs();
                probe.status = 0;
              },
            ),
          );
          await sleep(options.probeIntervalMs);
        }
        await Promise.all(pending);
      } finally {
        // Also on failure: nothing may keep polling a cluster that is about to be closed.
        watching = false;
        await Promise.all(watchers);
        await Promise.all([...seqPollers.values()].map((p) => p.stop()));
      }

      const newLeader = [...leaderSeen.keys()][0];
      const { viaLeader, viaStandby } = qualifying();
      if (newLeader === undefined || (viaLeader === undefined && viaStandby === undefined)) {
        throw new Error(
          `trial ${trial}: no replicated write acknowledged within ${options.trialTimeoutMs} ms of killing node${killed} ` +
            `(leader seen: ${newLeader === undefined ? 'none' : `node${newLeader}`}; ${probes.length} probes)\n` +
            survivors.map((i) => `node${i} said:\n${cluster.output(i).slice(-2000)}`).join('\n'),
        );
      }
      const readyAt = leaderSeen.get(newLeader) as number;
      const preLeader = probes.filter((p) => p.target === newLeader && p.sentAt < readyAt && p.status === 200);
      const firstAck = Math.min(viaLeader ?? Number.POSITIVE_INFINITY, viaStandby ?? Number.POSITIVE_INFINITY);
      const after = await cluster.status(newLeader);
      // Where the early-acked events sit in the new leader's log (read after the trial).
      let preLeaderAcksUnreplicated = 0;
      if (preLeader.length > 0) {
        const wanted = new Set(preLeader.map((p) => p.eventId));
        const seqOf = new Map<string, number>();
        await cluster.readLog(newLeader, before.seq, before.term, (entries) => {
          for (const e of entries) if (wanted.has(e.eventId)) seqOf.set(e.eventId, e.seq);
        });
        const standbySamples = [...seqPollers.entries()].find(([i]) => i !== newLeader)?.[1].samples ?? [];
        for (const p of preLeader) {
          const seq = seqOf.get(p.eventId);
          if (seq !== undefined && provenMissingAt(standbySamples, seq, p.answeredAt as number)) preLeaderAcksUnreplicated++;
        }
      }

      const restartAt = absoluteNowMs();
      await cluster.start(killed);
      const steady = await cluster.waitForSteady(120_000);
      if (steady.leader !== newLeader) options.log(`  note: leadership moved again, to node${steady.leader}, while node${killed} rejoined`);
      const result: FailoverTrial = {
        trial,
        killed: `node${killed}`,
        newLeader: `node${newLeader}`,
        termBefore: before.term,
        termAfter: after.term,
        leaderReadyMs: readyAt - killedAt,
        viaLeaderMs: viaLeader === undefined ? undefined : viaLeader - killedAt,
        viaStandbyMs: viaStandby === undefined ? undefined : viaStandby - killedAt,
        firstAckMs: firstAck - killedAt,
        preLeaderAcks: preLeader.length,
        preLeaderFirstAckMs: preLeader.length === 0 ? undefined : Math.min(...preLeader.map((p) => p.answeredAt as number)) - killedAt,
        preLeaderAcksUnreplicated,
        probes: probes.length,
        probes503: probes.filter((p) => p.status === 503).length,
        rejoinMs: absoluteNowMs() - restartAt,
      };
      trials.push(result);
      const s = (v: number | undefined) => (v === undefined ? 'n/a' : `${(v / 1000).toFixed(2)} s`);
      options.log(
        `    node${newLeader} led after ${s(result.leaderReadyMs)}; first replicated ack ${s(result.firstAckMs)} ` +
          `(via leader ${s(result.viaLeaderMs)}, via standby ${s(result.viaStandbyMs)}); node${killed} rejoined in ${s(result.rejoinMs)}`,
      );
    }
    return { trials, leaseTtlMs: 3000, pollMs: options.healthPollMs };
  } finally {
    agent.destroy();
  }
}
