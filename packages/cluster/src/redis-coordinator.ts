import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Coordinator, LeaderRecord, MemberInfo } from './coordinator.js';

export interface RedisCoordinatorOptions {
  /** `redis://host:port` */
  url: string;
  /** Keys live under `auditlake:<clusterName>:`. */
  clusterName: string;
  nodeId: string;
  leaseTtlMs: number;
}

/**
 * Win the lease only if nobody holds it, and take the next term in the same atomic step, so
 * two winners can never share a term. KEYS: lease, term. ARGV: nodeId, ttl ms.
 */
const CAMPAIGN = `
if redis.call('SET', KEYS[1], ARGV[1] .. '|0', 'NX', 'PX', ARGV[2]) then
  local term = redis.call('INCR', KEYS[2])
  if term <= tonumber(ARGV[3]) then
    term = tonumber(ARGV[3]) + 1
    redis.call('SET', KEYS[2], string.format('%d', term))
  end
  -- %d, not Lua's own number text: that is %.14g, and from 1e14 the lease read '1e+14', which
  -- no renewal matched (the cluster kept no leader; review).
  redis.call('SET', KEYS[1], ARGV[1] .. '|' .. string.format('%d', term), 'PX', ARGV[2])
  return term
end
return 0`;

/**
 * Keep the term counter at least at a term this node has seen. Redis may restart empty; the
 * terms the nodes remember put the counter back, so a new term is always newer. KEYS: term.
 * ARGV: known term.
 */
const RAISE_TERM_FLOOR = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
end
return 1`;

/** Extend the lease only while it is still ours in this term. KEYS: lease. ARGV: value, ttl ms. */
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`;

/**
 * The cluster token (KEYS: token, whether a node with data set or confirmed it; ARGV: the
 * asker's candidate, '1' when it remembers it and its log holds entries): set when absent; a
 * token a node without data set ('0') is replaced by the remembered token of a node with data
 * (a new node asked first after Redis lost its data; the cluster's nodes hold the old one).
 * A token without the flag (set by an older version) counts as set with data.
 */
const CLUSTER_TOKEN = `
local current = redis.call('GET', KEYS[1])
if not current or (ARGV[2] == '1' and current ~= ARGV[1] and redis.call('GET', KEYS[2]) == '0') then
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('SET', KEYS[2], ARGV[2])
  return ARGV[1]
end
if ARGV[2] == '1' and current == ARGV[1] then redis.call('SET', KEYS[2], '1') end
return current
`;

/**
 * Publishes a member record (KEYS: member record, member set; ARGV: record, instance, lease TTL
 * ms, nodeId) for 3 lease TTLs, unless another instance published this node id within the last
 * lease TTL (the record still has more than 2 TTLs to live): that record is returned untouched.
 * A record without an instance (an older version), or one not refreshed for a TTL (its process
 * gone), is replaced.
 */
const PUBLISH = `
local current = redis.call('GET', KEYS[1])
if current and ARGV[2] ~= '' then
  local ok, record = pcall(cjson.decode, current)
  if ok and type(record) == 'table' and type(record.instance) == 'string' and record.instance ~= ARGV[2] and redis.call('PTTL', KEYS[1]) > 2 * tonumber(ARGV[3]) then
    return current
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', 3 * tonumber(ARGV[3]))
redis.call('SADD', KEYS[2], ARGV[4])
return false
`;

/** Give the lease up only if it is ours. KEYS: lease. ARGV: value. */
const RESIGN = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`;

/**
 * The Coordinator on Redis: the leader lease (SET NX PX, renewed), the term counter
 * (INCR at every win) and the members. Redis is an existing, well-understood service used
 * only for these few keys; no consensus is home-made here. Commands fail fast while Redis is
 * unreachable (no offline queue), so a leader notices it cannot renew before its lease ends.
 */
export class RedisCoordinator implements Coordinator {
  readonly #redis: Redis;
  readonly #options: RedisCoordinatorOptions;
  readonly #prefix: string;

  constructor(options: RedisCoordinatorOptions) {
    this.#options = options;
    this.#prefix = `auditlake:${options.clusterName}:`;
    const timeoutMs = Math.max(100, Math.floor(options.leaseTtlMs / 3));
    this.#redis = new Redis(options.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: timeoutMs,
      connectTimeout: timeoutMs,
      // Reconnect quickly and forever: Redis coming back must end an outage without a restart.
      retryStrategy: () => Math.min(200, timeoutMs),
      lazyConnect: false,
    });
    // Errors surface as rejected commands; the connection's own error events are expected noise.
    this.#redis.on('error', () => undefined);
  }

  /** Resolves true once connected to Redis, false after `timeoutMs` (commands fail until then). */
  async connected(timeoutMs: number): Promise<boolean> {
    if (this.#redis.status === 'ready') return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#redis.off('ready', onReady);
        resolve(false);
      }, timeoutMs);
      const onReady = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.#redis.once('ready', onReady);
    });
  }

  #key(name: string): string {
    return this.#prefix + name;
  }

  /**
   * Tries to become leader; resolves with the new term (always above `knownTerm`), or 0 when
   * someone holds the lease.
   */
  async campaign(knownTerm: number): Promise<number> {
    const term = await this.#redis.eval(CAMPAIGN, 2, this.#key('leader'), this.#key('term'), this.#options.nodeId, String(this.#options.leaseTtlMs), String(knownTerm));
    return Number(term);
  }

  /** Puts the term counter back to at least `knownTerm` (after Redis lost its data). */
  async raiseTermFloor(knownTerm: number): Promise<void> {
    await this.#redis.eval(RAISE_TERM_FLOOR, 1, this.#key('term'), String(knownTerm));
  }

  /** Extends our lease for `term`; false when it is no longer ours. */
  async renew(term: number): Promise<boolean> {
    const result = await this.#redis.eval(RENEW, 1, this.#key('leader'), `${this.#options.nodeId}|${term}`, String(this.#options.leaseTtlMs));
    return Number(result) === 1;
  }

  async resign(term: number): Promise<void> {
    await this.#redis.eval(RESIGN, 1, this.#key('leader'), `${this.#options.nodeId}|${term}`);
  }

  /** The current lease holder, if any. */
  async leader(): Promise<LeaderRecord | undefined> {
    const value = await this.#redis.get(this.#key('leader'));
    if (value === null) return undefined;
    const bar = value.lastIndexOf('|');
    const term = Number(value.slice(bar + 1));
    // `|0` marks the instant inside the campaign script; no one outside sees it, but be safe.
    if (bar <= 0 || !Number.isSafeInteger(term) || term === 0) return undefined;
    return { nodeId: value.slice(0, bar), term };
  }

  /** The highest term ever handed out. */
  async latestTerm(): Promise<number> {
    return Number((await this.#redis.get(this.#key('term'))) ?? 0);
  }

  /** Publishes this node's member record; it expires unless refreshed within 3 lease TTLs. */
  async publish(info: MemberInfo): Promise<MemberInfo | undefined> {
    const held = await this.#redis.eval(PUBLISH, 2, this.#key(`member:${info.nodeId}`), this.#key('members'), JSON.stringify(info), info.instance ?? '', String(this.#options.leaseTtlMs), info.nodeId);
    return typeof held === 'string' ? (JSON.parse(held) as MemberInfo) : undefined;
  }

  /** Members whose record has not expired. */
  async members(): Promise<MemberInfo[]> {
    const ids = await this.#redis.smembers(this.#key('members'));
    if (ids.length === 0) return [];
    const values = await this.#redis.mget(ids.map((id) => this.#key(`member:${id}`)));
    const live: MemberInfo[] = [];
    const gone: string[] = [];
    values.forEach((value, i) => {
      if (value === null) gone.push(ids[i] as string);
      else live.push(JSON.parse(value) as MemberInfo);
    });
    if (gone.length > 0) await this.#redis.srem(this.#key('members'), ...gone);
    return live;
  }

  /**
   * The secret nodes present to each other's internal endpoints. The first node to ask
   * creates it (or puts back the one it remembers, should Redis have restarted empty);
   * whoever can read Redis already controls the cluster, so keeping it there adds no exposure.
   */
  async clusterToken(remembered: string | undefined, withData = false): Promise<string> {
    const candidate = remembered ?? randomBytes(24).toString('base64url');
    const token = await this.#redis.eval(CLUSTER_TOKEN, 2, this.#key('cluster-token'), this.#key('cluster-token-data'), candidate, withData && remembered !== undefined ? '1' : '0');
    if (typeof token !== 'string') throw new Error('cluster token vanished from Redis');
    return token;
  }

  async close(): Promise<void> {
    this.#redis.disconnect();
  }
}
