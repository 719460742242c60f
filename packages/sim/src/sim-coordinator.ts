import { InMemoryCoordinator, InMemoryCoordinatorState, type Coordinator, type CoordinatorLink } from '@auditlake/cluster';
import type { Random } from './random.js';
import type { EventOwner, Scheduler } from './scheduler.js';
import type { SimNetwork } from './sim-network.js';
import { EPOCH_MS } from './scheduler.js';

/**
 * The simulated coordinator: one in-memory state (what Redis holds) that each node reaches
 * over the simulated network. It can go down (calls fail fast, as with Redis and no offline
 * queue) and come back with or without its data.
 */
export class SimCoordinator {
  readonly state: InMemoryCoordinatorState;
  readonly #scheduler: Scheduler;
  readonly #network: SimNetwork;

  constructor(scheduler: Scheduler, network: SimNetwork, random: Random) {
    this.#scheduler = scheduler;
    this.#network = network;
    this.state = new InMemoryCoordinatorState({
      clock: { monotonicMs: () => scheduler.nowMs, wallMs: () => EPOCH_MS + scheduler.nowMs, setTimer: (callback, delayMs) => scheduler.schedule(delayMs, 'coordinator timer', callback) },
      newToken: () => `token-${random.int(0, 2 ** 31)}`,
    });
  }

  get up(): boolean {
    return this.state.reachable;
  }

  down(): void {
    this.state.reachable = false;
  }

  /** Back up; `withData` false is a restart that lost every key. */
  restart(withData: boolean): void {
    if (!withData) this.state.loseData();
    this.state.reachable = true;
  }

  /** A client for `node`, whose calls time out after `commandTimeoutMs` as the Redis client's do. */
  clientFor(node: EventOwner, nodeId: string, leaseTtlMs: number): Coordinator {
    const commandTimeoutMs = Math.max(100, Math.floor(leaseTtlMs / 3));
    const link: CoordinatorLink = (operation) =>
      new Promise((resolve, reject) => {
        let settled = false;
        const finish = (settle: () => void) => {
          if (settled) return;
          settled = true;
          timer.cancel();
          settle();
        };
        const timer = this.#scheduler.schedule(commandTimeoutMs, `${node.name} coordinator timeout`, () => finish(() => reject(new Error('coordinator command timed out'))), node);
        if (!this.state.reachable) {
          this.#scheduler.schedule(1, `${node.name} coordinator refused`, () => finish(() => reject(new Error('coordinator unreachable'))), node);
          return;
        }
        const there = this.#network.delayMs();
        if (there === undefined) return;
        this.#scheduler.schedule(there, `${node.name}→coordinator`, () => {
          let answer: () => void;
          try {
            const value = operation();
            answer = () => resolve(value);
          } catch (err) {
            answer = () => reject(err instanceof Error ? err : new Error(String(err)));
          }
          const back = this.#network.delayMs();
          if (back !== undefined) this.#scheduler.schedule(back, `coordinator→${node.name}`, () => finish(answer), node);
        });
      });
    return new InMemoryCoordinator(this.state, { nodeId, leaseTtlMs, link });
  }
}
