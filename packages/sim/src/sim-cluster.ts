import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditStore } from '@auditlake/store';
import { readLog, type LedgerView, type LogEntry } from './properties.js';
import { Random } from './random.js';
import { Scheduler } from './scheduler.js';
import { SimCoordinator } from './sim-coordinator.js';
import { CALM_NETWORK, SimNetwork } from './sim-network.js';
import { SimNode } from './sim-node.js';
import { Workload } from './workload.js';

export interface SimClusterOptions {
  seed: number;
  /** Nodes in the cluster (3–5). */
  size: number;
  leaseTtlMs?: number;
  /**
   * Each node's clock ahead of real time (negative: behind), by index; default a seeded skew of
   * up to ±2 s. Wall clocks only: lease timers run on the scheduler's time, as monotonic ones do.
   */
  clockSkewsMs?: readonly number[];
  /** Where the nodes' data dirs go; default a fresh dir in /dev/shm (or the OS temp dir). */
  root?: string;
}

/**
 * A whole cluster in one process: N SimNodes with real stores in temp dirs, the simulated
 * network and coordinator, the clients, all on one seeded scheduler. Faults are methods here;
 * the fault injector and the scenarios call them.
 */
export class SimCluster {
  readonly seed: number;
  readonly scheduler: Scheduler;
  readonly random: Random;
  readonly network: SimNetwork;
  readonly coordinator: SimCoordinator;
  readonly nodes: SimNode[];
  readonly workload: Workload;
  readonly root: string;
  /** What happened, for a failure report: faults and phases with their virtual time. */
  readonly timeline: string[] = [];
  /** Errors thrown by fault actions themselves (a crash that could not restart, …). */
  readonly errors: string[] = [];

  private constructor(options: SimClusterOptions, root: string) {
    this.seed = options.seed;
    this.root = root;
    this.random = new Random(options.seed);
    this.scheduler = new Scheduler(this.random.fork('scheduler'));
    this.network = new SimNetwork(this.scheduler, this.random.fork('network'));
    this.coordinator = new SimCoordinator(this.scheduler, this.network, this.random.fork('coordinator'));
    const skews = this.random.fork('clocks');
    this.nodes = Array.from(
      { length: options.size },
      (_, index) =>
        new SimNode(
          { index, dir: join(root, `node${index}`), leaseTtlMs: options.leaseTtlMs ?? 1000, clockSkewMs: options.clockSkewsMs?.[index] ?? skews.int(-2000, 2000), logTailBytes: 64 * 1024 },
          this.scheduler,
          this.network,
          this.coordinator,
        ),
    );
    this.workload = new Workload(this.scheduler, this.random.fork('workload'), this.nodes, (ids, except) => this.holders(ids, except), `s${options.seed}`);
  }

  /** Creates the cluster and starts every node. */
  static async create(options: SimClusterOptions): Promise<SimCluster> {
    const base = options.root ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());
    const root = await mkdtemp(join(base, `auditlake-sim-${options.seed}-`));
    const cluster = new SimCluster(options, root);
    cluster.scheduler.open();
    for (const node of cluster.nodes) await node.start();
    await cluster.scheduler.settle();
    return cluster;
  }

  get nowMs(): number {
    return this.scheduler.nowMs;
  }

  note(what: string): void {
    this.timeline.push(`${this.scheduler.nowMs} ms: ${what}`);
  }

  node(name: string): SimNode {
    const node = this.nodes.find((n) => n.name === name);
    if (node === undefined) throw new Error(`no node ${name}`);
    return node;
  }

  /** The node that leads now (running, not paused, with a valid lease), if one does. */
  leader(): SimNode | undefined {
    return this.nodes.find((n) => n.state === 'up' && n.cluster?.isLeader() === true);
  }

  /** Runs a fault's async action as part of the current step, recording a failure of its own. */
  act(what: string, action: () => Promise<void> | void): void {
    this.note(what);
    Promise.resolve()
      .then(action)
      .catch((err: unknown) => this.errors.push(`${this.scheduler.nowMs} ms: ${what} failed: ${String(err)}`));
  }

  crash(node: SimNode): Promise<void> {
    this.note(`crash ${node.name}`);
    return node.crash();
  }

  restart(node: SimNode): Promise<void> {
    this.note(`restart ${node.name}`);
    return node.start();
  }

  pause(node: SimNode): void {
    this.note(`pause ${node.name}`);
    node.pause();
  }

  resume(node: SimNode): void {
    this.note(`resume ${node.name}`);
    node.resume();
  }

  /**
   * Which nodes other than `except` hold each event now, in their log or outbox; a node that
   * is down is read from its disk.
   */
  async holders(eventIds: readonly string[], except: SimNode): Promise<Map<string, string[]>> {
    const found = new Map<string, string[]>(eventIds.map((id) => [id, []]));
    for (const node of this.nodes) {
      if (node === except) continue;
      await this.#withStore(node, async (store) => {
        const outbox = new Set(await store.outboxEventIds());
        for (const id of eventIds) {
          if (outbox.has(id) || (await store.getByEventId(id)) !== undefined) found.get(id)?.push(node.name);
        }
      });
    }
    return found;
  }

  /** Every node's whole log (a node that is down is read from its disk). */
  async logs(): Promise<Map<string, LogEntry[]>> {
    const logs = new Map<string, LogEntry[]>();
    for (const node of this.nodes) await this.#withStore(node, async (store) => void logs.set(node.name, await readLog(store)));
    return logs;
  }

  /** Every node's completeness ledger (a node that is down is read from its disk). */
  async ledgers(): Promise<Map<string, LedgerView>> {
    const ledgers = new Map<string, LedgerView>();
    for (const node of this.nodes) await this.#withStore(node, async (store) => void ledgers.set(node.name, { sources: store.sourceLedger(), days: await store.dayLedger() }));
    return ledgers;
  }

  async #withStore(node: SimNode, read: (store: AuditStore) => Promise<void>): Promise<void> {
    const open = node.store;
    if (open !== undefined) return read(open);
    if (!existsSync(node.options.dir)) return;
    const store = await AuditStore.open({ location: node.options.dir });
    try {
      await read(store);
    } finally {
      await store.close();
    }
  }

  /**
   * Ends every fault: calm network, coordinator up (with its data), paused nodes resumed,
   * crashed nodes restarted. Then the cluster must converge within `forMs`.
   */
  async heal(): Promise<void> {
    this.note('heal');
    this.network.conditions = CALM_NETWORK;
    this.network.mendLinks();
    if (!this.coordinator.up) this.coordinator.restart(true);
    for (const node of this.nodes) {
      if (node.state === 'paused') node.resume();
      if (node.state === 'down') await node.start();
    }
    await this.scheduler.settle();
  }

  /**
   * Converged: every node runs, one leads and the others follow it, outboxes are empty and
   * every log ends at the same (seq, term).
   */
  converged(): boolean {
    const leader = this.leader();
    if (leader === undefined) return false;
    const end = leader.store?.position;
    if (end === undefined) return false;
    return this.nodes.every((n) => {
      const store = n.store;
      if (n.state !== 'up' || store === undefined || store.outboxCount > 0) return false;
      if (store.position.lastSeq !== end.lastSeq || store.position.lastTerm !== end.lastTerm) return false;
      return n === leader || n.cluster?.leader?.nodeId === leader.nodeId;
    });
  }

  /** A failure report: the timeline and each node's state and recent log. */
  diagnostics(): string {
    const lines = [`seed ${this.seed}, ${this.nodes.length} nodes, ${this.scheduler.nowMs} virtual ms, ${this.scheduler.steps} steps`];
    lines.push('timeline:', ...this.timeline.slice(-60).map((l) => `  ${l}`));
    for (const node of this.nodes) {
      const p = node.store?.position;
      lines.push(
        `${node.name}: ${node.state}${p ? `, log ends at seq ${p.lastSeq} term ${p.lastTerm}, outbox ${node.store?.outboxCount}` : ''}${node.cluster ? `, knows term ${node.cluster.elector.knownTerm}, leader ${node.cluster.leader?.nodeId ?? 'none'}` : ''}`,
      );
      lines.push(...node.logLines.slice(-25).map((l) => `    ${l}`));
    }
    return lines.join('\n');
  }

  /** Abandons every node (as crashes: nothing graceful is needed) and deletes the data. */
  async close(): Promise<void> {
    for (const node of this.nodes) await node.crash();
    this.scheduler.close();
    await rm(this.root, { recursive: true, force: true });
  }
}
