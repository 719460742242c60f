import { encodeEvent, type AuditEvent, type EncodedEvent } from '@auditlake/model';
import type { Random } from './random.js';
import { EPOCH_MS, type Scheduler } from './scheduler.js';
import type { SimNode } from './sim-node.js';

export type AckKind = 'local' | 'replicated';

/** An event a node acknowledged to the client. */
export interface Acked {
  eventId: string;
  ack: AckKind;
  /** The node that acknowledged it. */
  node: string;
  atMs: number;
}

/** Who holds an event at some moment: nodes with it in their log or outbox. */
export type HolderCheck = (eventIds: readonly string[], except: SimNode) => Promise<Map<string, string[]>>;

const CLIENT_TIMEOUT_MS = 15_000;
const ACK_REPLICATED_TIMEOUT_MS = 5_000;
/** Sources each client sends as (workload events). */
const SOURCES_PER_CLIENT = 3;

/**
 * The clients: ingest requests to any node, some with ack=replicated, some re-sent after a
 * failure (same eventIds, as a real client retries). Records what was acknowledged, and at the
 * moment of each ack=replicated answer checks that a node other than the answering one holds
 * every event of the request (property 4).
 */
export class Workload {
  readonly acked = new Map<string, Acked>();
  /** Property 4 failures seen at ack time. */
  readonly violations: string[] = [];
  readonly #scheduler: Scheduler;
  readonly #random: Random;
  readonly #nodes: readonly SimNode[];
  readonly #holders: HolderCheck;
  readonly #prefix: string;
  #next = 1;
  #running = false;
  #failed: Array<{ events: AuditEvent[]; replicated: boolean }> = [];
  requests = 0;
  answered = 0;
  /** Each source's last sourceSeq (#nextSource). */
  readonly #sourceSeqs = new Map<string, number>();

  constructor(scheduler: Scheduler, random: Random, nodes: readonly SimNode[], holders: HolderCheck, prefix: string) {
    this.#scheduler = scheduler;
    this.#random = random;
    this.#nodes = nodes;
    this.#holders = holders;
    this.#prefix = prefix;
  }

  /**
   * New events with fresh ids, each from one of SOURCES_PER_CLIENT sources (round robin) with
   * that source's next sourceSeq, kept by a retry: the completeness ledger then has holes only
   * where a client gave up on a request (property 5).
   */
  events(count: number): AuditEvent[] {
    return Array.from({ length: count }, () => ({
      ...this.#nextSource(),
      eventId: `${this.#prefix}-${this.#next++}`,
      userId: `user${this.#random.int(1, 5)}`,
      source: 'trino',
      action: 'data:Insert',
      resource: 'hive.sales.orders',
      decision: 'ALLOW' as const,
      tables: ['hive.sales.orders'],
      query: '',
      details: '',
      timestamp: EPOCH_MS + this.#scheduler.nowMs,
    }));
  }

  /** The next event's sourceId and sourceSeq (drawing no random number: seeds keep their runs). */
  #nextSource(): { sourceId: string; sourceSeq: number } {
    const sourceId = `${this.#prefix}-source${this.#next % SOURCES_PER_CLIENT}`;
    const sourceSeq = (this.#sourceSeqs.get(sourceId) ?? 0) + 1;
    this.#sourceSeqs.set(sourceId, sourceSeq);
    return { sourceId, sourceSeq };
  }

  /** Sends requests at random intervals until stop(). */
  start(): void {
    this.#running = true;
    const tick = () => {
      if (!this.#running) return;
      this.#sendRandom();
      this.#scheduler.schedule(this.#random.int(5, 150), 'client', tick);
    };
    this.#scheduler.schedule(0, 'client', tick);
  }

  stop(): void {
    this.#running = false;
  }

  #sendRandom(): void {
    const node = this.#random.pick(this.#nodes);
    const retry = this.#failed.length > 0 && this.#random.chance(0.2) ? this.#failed.shift() : undefined;
    const events = retry?.events ?? this.events(this.#random.int(1, 20));
    const replicated = retry?.replicated ?? this.#random.chance(0.3);
    void this.send(node, events, replicated).then((ok) => {
      if (!ok && this.#failed.length < 100) this.#failed.push({ events, replicated });
    });
  }

  /**
   * One ingest request to `node`; resolves true when the client got a 200 (then every event
   * counts as acknowledged), false on any failure or after the client's timeout.
   */
  send(node: SimNode, events: readonly AuditEvent[], replicated: boolean): Promise<boolean> {
    this.requests++;
    const encoded = events.map(encodeEvent);
    return new Promise<boolean>((resolve) => {
      let settled = false;
      const answer = (ok: boolean) => {
        if (settled) return;
        settled = true;
        timeout.cancel();
        this.answered++;
        if (ok) for (const event of events) this.acked.set(event.eventId, { eventId: event.eventId, ack: replicated ? 'replicated' : 'local', node: node.name, atMs: this.#scheduler.nowMs });
        resolve(ok);
      };
      const timeout = this.#scheduler.schedule(CLIENT_TIMEOUT_MS, 'client timeout', () => answer(false));
      const reply = (ok: boolean) => this.#scheduler.schedule(this.#random.int(1, 5), `${node.name}→client`, () => answer(ok));
      if (!node.running) {
        reply(false);
        return;
      }
      this.#scheduler.schedule(this.#random.int(1, 5), `client→${node.name}`, () => void this.#serve(node, encoded, replicated).then(reply, () => reply(false)), node);
    });
  }

  /** What the node does with the request; true for a 200. */
  async #serve(node: SimNode, events: readonly EncodedEvent[], replicated: boolean): Promise<boolean> {
    const cluster = node.cluster;
    if (cluster === undefined) return false;
    const incarnation = node.incarnation;
    // Client-supplied ids: none is fresh, so the leader looks each up (a retry must not store twice).
    await cluster.receive(events);
    if (!replicated) return node.incarnation === incarnation;
    if (!(await cluster.confirmReplicated(events, ACK_REPLICATED_TIMEOUT_MS))) return false;
    if (node.incarnation !== incarnation) return false;
    const holders = await this.#holders(
      events.map((e) => e.eventId),
      node,
    );
    const missing = events.filter((e) => (holders.get(e.eventId) ?? []).length === 0).map((e) => e.eventId);
    if (missing.length > 0) {
      this.violations.push(`property 4: ${node.name} answered ack=replicated at ${this.#scheduler.nowMs} ms, but no other node holds ${missing.length} of its ${events.length} events (${missing.slice(0, 3).join(', ')}…)`);
    }
    return true;
  }
}
