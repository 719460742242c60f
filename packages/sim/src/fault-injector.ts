import type { Random } from './random.js';
import type { SimCluster } from './sim-cluster.js';

/**
 * Random, overlapping faults for the fault phase of a run: crashes and restarts, pauses,
 * coordinator outages (coming back with or without its data), every link of one node cut (the
 * coordinator still reached), and message loss and delay.
 * Every choice comes from the seeded stream, so a seed replays the same faults at the same
 * virtual times.
 */
export class FaultInjector {
  readonly #cluster: SimCluster;
  readonly #random: Random;
  #running = false;

  constructor(cluster: SimCluster, random: Random) {
    this.#cluster = cluster;
    this.#random = random;
  }

  start(): void {
    this.#running = true;
    this.#next();
  }

  stop(): void {
    this.#running = false;
  }

  #next(): void {
    this.#cluster.scheduler.schedule(this.#random.int(50, 1500), 'fault', () => {
      if (!this.#running) return;
      this.#inject();
      this.#next();
    });
  }

  #inject(): void {
    const cluster = this.#cluster;
    const random = this.#random;
    const scheduler = cluster.scheduler;
    const kind = random.pick(['crash', 'crash', 'pause', 'pause', 'pause', 'coordinator', 'network', 'cut'] as const);
    if (kind === 'crash') {
      // The leader is listed twice: crashing it is what tests failover.
      const candidates = cluster.nodes.filter((n) => n.state !== 'down').concat(cluster.leader() ?? []);
      if (candidates.length === 0) return;
      const node = random.pick(candidates);
      cluster.act(`crash ${node.name}`, () => node.crash());
      scheduler.schedule(random.int(100, 6000), 'fault', () => {
        if (this.#running && node.state === 'down') cluster.act(`restart ${node.name}`, () => node.start());
      });
    } else if (kind === 'pause') {
      const candidates = cluster.nodes.filter((n) => n.state === 'up');
      if (candidates.length === 0) return;
      const node = random.pick(candidates.concat(cluster.leader() ?? []));
      cluster.pause(node);
      scheduler.schedule(random.int(50, 5000), 'fault', () => {
        if (this.#running && node.state === 'paused') cluster.resume(node);
      });
    } else if (kind === 'coordinator') {
      if (!cluster.coordinator.up) return;
      cluster.note('coordinator down');
      cluster.coordinator.down();
      const withData = random.chance(0.5);
      scheduler.schedule(random.int(200, 6000), 'fault', () => {
        if (!this.#running || cluster.coordinator.up) return;
        cluster.note(`coordinator up ${withData ? 'with its data' : 'empty'}`);
        cluster.coordinator.restart(withData);
      });
    } else if (kind === 'cut') {
      // Every link of one node cut (the leader listed twice), the coordinator still reached: a
      // leader cut off long enough steps down and yields (leader-elector.ts, CUT_OFF_TTLS).
      const node = random.pick(cluster.nodes.concat(cluster.leader() ?? []));
      const others = cluster.nodes.filter((n) => n !== node);
      cluster.note(`links of ${node.name} cut`);
      for (const other of others) cluster.network.cutLink(node.name, other.name);
      scheduler.schedule(random.int(1000, 25_000), 'fault', () => {
        if (!this.#running) return;
        cluster.note(`links of ${node.name} mended`);
        for (const other of others) cluster.network.mendLink(node.name, other.name);
      });
    } else {
      const lossRate = random.pick([0, 0, 0.02, 0.1, 0.3]);
      const delayMsMin = random.int(0, 10);
      const delayMsMax = delayMsMin + random.pick([5, 20, 100, 400]);
      cluster.note(`network loss ${lossRate}, delay ${delayMsMin}–${delayMsMax} ms`);
      cluster.network.conditions = { lossRate, delayMsMin, delayMsMax };
    }
  }
}
