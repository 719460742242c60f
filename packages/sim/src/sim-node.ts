import { rm } from 'node:fs/promises';
import { ClusterNode, ClusterToken, type ForwardRequest, type ForwardResponse, type PullRequest, type PullResponse } from '@auditlake/cluster';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { NodeClock } from './node-clock.js';
import type { EventOwner, ScheduledEvent, Scheduler } from './scheduler.js';
import type { SimCoordinator } from './sim-coordinator.js';
import type { NetworkPeer, SimNetwork } from './sim-network.js';

export type SimNodeState = 'down' | 'up' | 'paused';

/** A simulated node's settings. */
export interface SimNodeOptions {
  index: number;
  dir: string;
  leaseTtlMs: number;
  /** How far this node's wall clock is off. */
  clockSkewMs: number;
  /** Bytes of log tail kept (small, so pulls are also served from LevelDB). */
  logTailBytes: number;
}

const LOG_LINES_KEPT = 200;

/** Anything but the leader's sequencer is refused, as on a real cluster node. */
const orderedOnlyByTheLeader = (): number => {
  throw new AuditError(AuditErrorCode.NOT_LEADER, 'a cluster node orders events only as the leader', { retryable: true });
};

/**
 * One node of the simulated cluster: a real AuditStore (LevelDB in a temp dir) and a real
 * ClusterNode, wired to the simulated clock, network and coordinator. It can crash (its
 * process state is gone, its disk stays), restart on the same disk, pause and resume.
 */
export class SimNode implements EventOwner, NetworkPeer {
  readonly index: number;
  readonly name: string;
  readonly nodeId: string;
  readonly url: string;
  readonly options: SimNodeOptions;
  #incarnation = 0;
  #state: SimNodeState = 'down';
  #parked: ScheduledEvent[] = [];
  #store: AuditStore | undefined;
  #cluster: ClusterNode | undefined;
  readonly #log: string[] = [];
  readonly #scheduler: Scheduler;
  readonly #network: SimNetwork;
  readonly #coordinator: SimCoordinator;
  readonly clock: NodeClock;

  constructor(options: SimNodeOptions, scheduler: Scheduler, network: SimNetwork, coordinator: SimCoordinator) {
    this.options = options;
    this.index = options.index;
    this.name = `n${options.index}`;
    this.nodeId = `node${options.index}`;
    this.url = `sim://node${options.index}`;
    this.#scheduler = scheduler;
    this.#network = network;
    this.#coordinator = coordinator;
    this.clock = new NodeClock(scheduler, this, options.clockSkewMs);
    network.add(this);
  }

  get incarnation(): number {
    return this.#incarnation;
  }

  get state(): SimNodeState {
    return this.#state;
  }

  get paused(): boolean {
    return this.#state === 'paused';
  }

  get running(): boolean {
    return this.#state !== 'down';
  }

  park(event: ScheduledEvent): void {
    this.#parked.push(event);
  }

  /** The open store (up or paused), else undefined. */
  get store(): AuditStore | undefined {
    return this.#store;
  }

  get cluster(): ClusterNode | undefined {
    return this.#cluster;
  }

  /** The node's recent log lines (virtual time, level, message, fields). */
  get logLines(): readonly string[] {
    return this.#log;
  }

  note(level: string, obj: object, msg: string): void {
    this.#log.push(`${this.#scheduler.nowMs} ${level} ${msg} ${JSON.stringify(obj)}`);
    if (this.#log.length > LOG_LINES_KEPT) this.#log.splice(0, this.#log.length - LOG_LINES_KEPT);
  }

  /** Starts the process on its disk (after a crash: recovery from what LevelDB kept). */
  async start(): Promise<void> {
    if (this.#state !== 'down') throw new Error(`${this.name} is already running`);
    const store = await AuditStore.open({ location: this.options.dir, now: () => this.clock.wallMs(), monotonicNow: () => this.clock.monotonicMs(), sequencer: orderedOnlyByTheLeader, logTailBytes: this.options.logTailBytes });
    const coordinator = this.#coordinator.clientFor(this, this.nodeId, this.options.leaseTtlMs);
    const cluster = await ClusterNode.open({
      store,
      coordinator,
      transport: this.#network.transportFor(this, (callback, delayMs) => this.clock.setTimer(callback, delayMs)),
      clock: this.clock,
      clusterToken: await ClusterToken.load(store, coordinator),
      nodeId: this.nodeId,
      leaseTtlMs: this.options.leaseTtlMs,
      forwardMaxAttempts: 5,
      forwardQueueCapacity: 10_000,
      log: { info: (obj, msg) => this.note('info', obj, msg), warn: (obj, msg) => this.note('warn', obj, msg) },
      hooks: { onForwarded: () => undefined, onForwardAttemptsExhausted: () => undefined, onOutboxOverCapacity: () => undefined, onDiverted: () => undefined, onDivergenceFound: () => undefined, onConflicts: () => Promise.resolve() },
    });
    this.#store = store;
    this.#cluster = cluster;
    this.#state = 'up';
    this.note('info', { incarnation: this.#incarnation }, 'started');
    cluster.start(this.url);
  }

  /**
   * kill -9: the process and everything it held in memory are gone; its events (timers,
   * answers on the way to it) are dropped and its connections reset. What LevelDB wrote stays
   * on disk: the store is closed without any further write (LevelDB's close writes nothing the
   * log does not already hold), as the kernel keeps a killed process's written files.
   */
  async crash(): Promise<void> {
    if (this.#state === 'down') return;
    this.#incarnation++;
    this.#state = 'down';
    this.#parked = [];
    this.#cluster = undefined;
    this.#network.crashed(this);
    const store = this.#store;
    this.#store = undefined;
    this.note('warn', { incarnation: this.#incarnation }, 'crashed');
    await store?.close();
  }

  /** A crash that also loses the disk. */
  async wipe(): Promise<void> {
    await this.crash();
    await rm(this.options.dir, { recursive: true, force: true });
    this.note('warn', {}, 'disk wiped');
  }

  /** SIGSTOP: nothing of this node runs until resume(); time goes on for everyone. */
  pause(): void {
    if (this.#state === 'up') this.#state = 'paused';
  }

  /** SIGCONT: whatever fell due meanwhile runs now, in order. */
  resume(): void {
    if (this.#state !== 'paused') return;
    this.#state = 'up';
    const parked = this.#parked;
    this.#parked = [];
    this.#scheduler.release(parked);
  }

  handlePull(request: PullRequest): Promise<PullResponse> {
    const cluster = this.#cluster;
    if (cluster === undefined) return Promise.reject(new Error(`${this.name} is down`));
    return cluster.pull(request);
  }

  handleForward(request: ForwardRequest): Promise<ForwardResponse> {
    const cluster = this.#cluster;
    if (cluster === undefined) return Promise.reject(new Error(`${this.name} is down`));
    return cluster.receiveForward(request);
  }
}
