import type { ForwardRequest, ForwardResponse, PeerTransport, PullRequest, PullResponse } from '@auditlake/cluster';
import type { Random } from './random.js';
import type { EventOwner, Scheduler } from './scheduler.js';

/** What the network does to each message now (changed by the fault injector). */
export interface NetworkConditions {
  /** Share of messages lost, each way independently. */
  lossRate: number;
  delayMsMin: number;
  delayMsMax: number;
}

export const CALM_NETWORK: NetworkConditions = { lossRate: 0, delayMsMin: 1, delayMsMax: 5 };

/** A node as the network sees it. */
export interface NetworkPeer extends EventOwner {
  readonly url: string;
  /** Started and not crashed (it may be paused). */
  readonly running: boolean;
  /** Answers a pull or forward as this node's cluster part does. */
  handlePull(request: PullRequest): Promise<PullResponse>;
  handleForward(request: ForwardRequest): Promise<ForwardResponse>;
}

interface Exchange {
  from: NetworkPeer;
  to: NetworkPeer;
  fail(reason: string): void;
}

/**
 * In-process peer calls with the failures of a real network: each message is delayed (so
 * messages overtake each other) or lost, per the current conditions. A call to a node that is
 * down is refused; a node that crashes resets every call it was part of; a paused node answers
 * only after it resumes, by which time the caller may have given up. Requests and answers are
 * copied, as a wire would, so no node ever holds another's objects.
 */
export class SimNetwork {
  conditions: NetworkConditions = CALM_NETWORK;
  readonly #scheduler: Scheduler;
  readonly #random: Random;
  readonly #peers = new Map<string, NetworkPeer>();
  readonly #open = new Set<Exchange>();
  /** Node pairs (names, sorted, joined by '|') between which every message is lost, with how many cuts hold each: overlapping cuts end one by one. */
  readonly #cutLinks = new Map<string, number>();

  constructor(scheduler: Scheduler, random: Random) {
    this.#scheduler = scheduler;
    this.#random = random;
  }

  add(peer: NetworkPeer): void {
    this.#peers.set(peer.url, peer);
  }

  /** A message's delay, or undefined when it is lost. */
  delayMs(): number | undefined {
    const { lossRate, delayMsMin, delayMsMax } = this.conditions;
    if (lossRate > 0 && this.#random.chance(lossRate)) return undefined;
    return this.#random.int(delayMsMin, delayMsMax);
  }

  /** Loses every message between `a` and `b` from now on, both ways (the coordinator is not affected). */
  cutLink(a: string, b: string): void {
    const key = linkKey(a, b);
    this.#cutLinks.set(key, (this.#cutLinks.get(key) ?? 0) + 1);
  }

  /** Ends one cut of the link between `a` and `b` (it stays cut while another cut holds it). */
  mendLink(a: string, b: string): void {
    const key = linkKey(a, b);
    const cuts = (this.#cutLinks.get(key) ?? 0) - 1;
    if (cuts > 0) this.#cutLinks.set(key, cuts);
    else this.#cutLinks.delete(key);
  }

  /** Mends every cut link. */
  mendLinks(): void {
    this.#cutLinks.clear();
  }

  /** A message's delay between `from` and `to`, or undefined when it is lost (a cut link, or by chance). */
  #delayBetween(from: NetworkPeer, to: NetworkPeer): number | undefined {
    return this.#cutLinks.has(linkKey(from.name, to.name)) ? undefined : this.delayMs();
  }

  /** `peer` crashed: every call to or from it fails (a reset connection). */
  crashed(peer: NetworkPeer): void {
    for (const exchange of [...this.#open]) {
      if (exchange.to !== peer && exchange.from !== peer) continue;
      this.#open.delete(exchange);
      exchange.fail(`connection to ${exchange.to.name} reset`);
    }
  }

  /** The transport `from` uses to reach its peers; its timeouts run on `setTimer` (its clock). */
  transportFor(from: NetworkPeer, setTimer: (callback: () => void, delayMs: number) => { cancel(): void }): PeerTransport {
    return {
      pull: (url, request, timeoutMs) =>
        this.#call(from, url, 'pull', timeoutMs, setTimer, copyJson(request), async (to, sent) => copyPullResponse(await to.handlePull(sent))),
      forward: (url, request, timeoutMs) =>
        this.#call(from, url, 'forward', timeoutMs, setTimer, copyJson(request), async (to, sent) => copyJson(await to.handleForward(sent))),
    };
  }

  /** `request` is copied when sent: what the caller changes afterwards does not travel. */
  #call<Q, T>(
    from: NetworkPeer,
    url: string,
    kind: string,
    timeoutMs: number,
    setTimer: (callback: () => void, delayMs: number) => { cancel(): void },
    request: Q,
    handle: (to: NetworkPeer, request: Q) => Promise<T>,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const to = this.#peers.get(url);
      let settled = false;
      // The exchange, once it is open (a refused call never opens one).
      const opened: Exchange[] = [];
      const timer = setTimer(() => finish(() => reject(new Error(`${url} did not answer within ${timeoutMs} ms`))), timeoutMs);
      const finish = (settle: () => void) => {
        if (settled) return;
        settled = true;
        timer.cancel();
        for (const exchange of opened) this.#open.delete(exchange);
        settle();
      };
      // An error reaches the caller after a network delay (lost errors end in its timeout).
      const failLater = (reason: string) => {
        const delay = this.delayMs();
        if (delay !== undefined) this.#scheduler.schedule(delay, `${from.name} ${kind} error`, () => finish(() => reject(new Error(reason))), from);
      };
      if (to === undefined || !to.running) {
        failLater(`connection to ${url} refused`);
        return;
      }
      const open: Exchange = { from, to, fail: (reason) => failLater(reason) };
      opened.push(open);
      this.#open.add(open);
      const there = this.#delayBetween(from, to);
      if (there === undefined) return;
      this.#scheduler.schedule(
        there,
        `${from.name}→${to.name} ${kind}`,
        () => {
          if (settled) return;
          handle(to, request).then(
            (answer) => {
              if (!this.#open.has(open)) return;
              const back = this.#delayBetween(to, from);
              if (back !== undefined) this.#scheduler.schedule(back, `${to.name}→${from.name} ${kind} answer`, () => finish(() => resolve(answer)), from);
            },
            (err: unknown) => {
              if (this.#open.has(open)) failLater(`${url} answered with an error: ${String(err)}`);
            },
          );
        },
        to,
      );
    });
  }
}

function copyJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Header as JSON, entries byte for byte (as the NDJSON wire form carries them). */
function copyPullResponse(response: PullResponse): PullResponse {
  const { entries, ...header } = response;
  return { ...copyJson(header), entries: entries.map((entry) => Buffer.from(entry)) };
}

function linkKey(a: string, b: string): string {
  return [a, b].sort().join('|');
}
