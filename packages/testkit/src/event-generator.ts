/**
 * A seeded, deterministic generator of realistic audit events, as engines send them to
 * `POST /v1/api/audit`: ~200 users, ~2,000 `catalog.schema.table` names, the engines trino,
 * spark, flink and ontul, mostly `data:Select` with the usual writes, ~3% DENY, and varied SQL.
 *
 * The same seed and options always give the same events in the same order, so a benchmark and
 * its reference write byte-identical data and a failing test replays from its printed seed.
 * Popularity is skewed (a few users and tables carry most of the traffic), as in a real lakehouse.
 */

import { seededRandom } from '@auditlake/model';

/** One generated event in the ingest input shape (docs/http-api.md, "Events"). */
export interface GeneratedEvent {
  source: string;
  userId: string;
  action: string;
  resource: string;
  tables: string[];
  query: string;
  decision: 'ALLOW' | 'DENY';
  details: string;
  /** Event time, epoch ms. */
  ts: number;
  /** Present only with `eventIds: true`. */
  eventId?: string;
}

export interface EventGeneratorOptions {
  /** Any integer; the whole sequence follows from it. */
  seed: number;
  /** Earliest event time, epoch ms. Default: 2025-01-01T00:00:00Z. */
  startTs?: number;
  /** Event times fall in [startTs, startTs + spanMs). Default: one day. */
  spanMs?: number;
  /**
   * Events expected over the span. When given, events come in arrival order: event i is placed
   * at startTs + i·spanMs/count, moved back by up to `jitterMs` (engines report a little late),
   * the way a live stream reaches a node. Without it, times are uniform at random in the span.
   */
  count?: number;
  /** Lateness of an arrival-ordered event, at most; default 2,000 ms. */
  jitterMs?: number;
  /** Give each event a client-side eventId (UUIDv7-shaped, from the seed); default false. */
  eventIds?: boolean;
  /** Distinct users; default 200. */
  userCount?: number;
  /** Distinct tables; default 2,000. */
  tableCount?: number;
  /** Share of events refused; default 0.03. */
  denyRate?: number;
}

export interface EventGenerator {
  /** The next event. */
  next(): GeneratedEvent;
  /** The next `n` events. */
  batch(n: number): GeneratedEvent[];
  /** Events generated so far. */
  readonly generated: number;
  /** The user ids this generator draws from (most active first). */
  readonly users: readonly string[];
  /** The table names this generator draws from (most read first). */
  readonly tables: readonly string[];
}

const DAY_MS = 24 * 60 * 60 * 1000;
const DEFAULT_START_TS = Date.UTC(2025, 0, 1);

/** mulberry32 (model's seededRandom): a 32-bit PRNG, tiny and good enough for test data; returns [0, 1). Seeded, so a run can be replayed. */
export const mulberry32: (seed: number) => () => number = seededRandom;

/** Random helpers over one PRNG, so every draw advances the same sequence. */
class Dice {
  constructor(readonly random: () => number) {}

  int(n: number): number {
    return Math.floor(this.random() * n);
  }

  chance(p: number): boolean {
    return this.random() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  /** Index skewed towards 0 (power law): a few items get most draws. */
  skewed<T>(items: readonly T[], exponent = 2.2): T {
    return items[Math.floor(this.random() ** exponent * items.length)] as T;
  }

  weighted<T>(choices: ReadonlyArray<readonly [T, number]>): T {
    let total = 0;
    for (const [, w] of choices) total += w;
    let r = this.random() * total;
    for (const [value, w] of choices) {
      r -= w;
      if (r < 0) return value;
    }
    return (choices[choices.length - 1] as readonly [T, number])[0];
  }

  hex(digits: number): string {
    let s = '';
    for (let i = 0; i < digits; i++) s += this.int(16).toString(16);
    return s;
  }
}

const FIRST_NAMES = [
  'alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi', 'ivan', 'judy', 'mallory', 'niaj', 'olivia', 'peggy',
  'rupert', 'sybil', 'trent', 'victor', 'walter', 'yuna', 'minji', 'jisoo', 'hyun', 'seo', 'kenji', 'aiko', 'ravi', 'priya',
  'lucas', 'sofia', 'mateo', 'lena', 'noah', 'emma', 'liam', 'mia', 'omar', 'fatima', 'chen', 'wei',
];
const LAST_NAMES = [
  'kim', 'lee', 'park', 'choi', 'jung', 'smith', 'jones', 'garcia', 'muller', 'rossi', 'tanaka', 'sato', 'patel', 'singh',
  'nguyen', 'silva', 'novak', 'berg', 'costa', 'dubois', 'haddad', 'khan', 'wang', 'zhang', 'olsen',
];
const SERVICE_ACCOUNTS = [
  'svc-airflow', 'svc-dbt', 'svc-superset', 'svc-flink-jobs', 'svc-spark-etl', 'svc-ml-features', 'svc-reverse-etl',
  'svc-dq-checks', 'svc-tableau', 'svc-jupyterhub', 'svc-backfill', 'svc-cdc-ingest',
];

const CATALOGS = ['iceberg', 'hive', 'lake', 'ontul_iceberg', 'warehouse'];
const SCHEMAS = [
  'sales', 'finance', 'marketing', 'hr', 'ops', 'risk', 'logistics', 'product', 'growth', 'support', 'billing', 'identity',
  'inventory', 'payments', 'fraud', 'crm', 'ads', 'search', 'ml_features', 'staging', 'raw', 'curated', 'reporting', 'security',
];
const ENTITIES = [
  'orders', 'customers', 'accounts', 'invoices', 'payments', 'sessions', 'clicks', 'impressions', 'shipments', 'products',
  'sku_prices', 'refunds', 'tickets', 'employees', 'payroll', 'campaigns', 'leads', 'transactions', 'devices', 'logins',
  'stock_levels', 'suppliers', 'returns', 'subscriptions', 'churn_scores', 'fx_rates', 'ledger_entries', 'carts', 'reviews',
  'page_views', 'audit_trail', 'chargebacks', 'warehouses', 'routes', 'contracts',
];
const TABLE_SUFFIXES = ['', '_daily', '_hourly', '_raw', '_dim', '_fact', '_agg', '_snapshot', '_v2', '_cleaned', '_enriched', '_history'];

const COLUMNS = [
  'id', 'customer_id', 'account_id', 'order_id', 'amount', 'currency', 'region', 'country', 'status', 'created_at', 'updated_at',
  'dt', 'channel', 'product_id', 'quantity', 'price', 'email', 'device_type', 'session_id', 'score', 'category', 'is_active',
];
const REGIONS = ['EU', 'US', 'APAC', 'LATAM', 'KR', 'JP'];
const STATUSES = ['OPEN', 'PAID', 'SHIPPED', 'CANCELLED', 'REFUNDED', 'FAILED'];
const CLIENTS = ['superset', 'dbt', 'airflow', 'jupyter', 'tableau', 'trino-cli', 'datagrip', 'spark-submit', 'flink-sql-gateway'];

type Engine = 'trino' | 'spark' | 'flink' | 'ontul';
const ENGINES: ReadonlyArray<readonly [Engine, number]> = [
  ['trino', 50],
  ['spark', 28],
  ['flink', 10],
  ['ontul', 12],
];

type Action = 'data:Select' | 'data:Insert' | 'data:Write' | 'data:CreateTable' | 'data:Delete' | 'data:AlterTable' | 'data:DropTable';
const ACTIONS_BY_ENGINE: Record<Engine, ReadonlyArray<readonly [Action, number]>> = {
  trino: [['data:Select', 86], ['data:Insert', 6], ['data:CreateTable', 4], ['data:Delete', 2], ['data:AlterTable', 1], ['data:DropTable', 1]],
  spark: [['data:Select', 62], ['data:Insert', 12], ['data:Write', 16], ['data:CreateTable', 6], ['data:Delete', 2], ['data:AlterTable', 1], ['data:DropTable', 1]],
  flink: [['data:Select', 40], ['data:Insert', 45], ['data:Write', 12], ['data:CreateTable', 3]],
  ontul: [['data:Select', 88], ['data:Insert', 5], ['data:CreateTable', 4], ['data:AlterTable', 2], ['data:DropTable', 1]],
};

const DENY_REASONS = [
  (engine: Engine) => `${engine} authz plugin (ontul: ABSTAIN)`,
  (engine: Engine) => `${engine} authz plugin (ontul: DENY)`,
  (engine: Engine) => `${engine} authz plugin (ontul: DENY, policy pii-columns-masked)`,
  (engine: Engine) => `${engine} authz plugin (ontul: DENY, no grant on schema)`,
  (engine: Engine) => `${engine} authz plugin (ranger: DENY, policy 12 finance-restricted)`,
];

function buildUsers(dice: Dice, count: number): string[] {
  const users = new Set<string>(SERVICE_ACCOUNTS.slice(0, Math.min(SERVICE_ACCOUNTS.length, Math.ceil(count / 16))));
  // Bounded: FIRST_NAMES × LAST_NAMES × 100 suffixes is far more than any sensible count.
  for (let attempt = 0; users.size < count && attempt < count * 50; attempt++) {
    const base = `${dice.pick(FIRST_NAMES)}.${dice.pick(LAST_NAMES)}`;
    users.add(users.has(base) ? `${base}${dice.int(100)}` : base);
  }
  return [...users];
}

function buildTables(dice: Dice, count: number): string[] {
  const tables = new Set<string>();
  for (let attempt = 0; tables.size < count && attempt < count * 50; attempt++) {
    tables.add(`${dice.pick(CATALOGS)}.${dice.pick(SCHEMAS)}.${dice.pick(ENTITIES)}${dice.pick(TABLE_SUFFIXES)}`);
  }
  return [...tables];
}

/** A UUIDv7-shaped id: the event time, then bits from the seeded sequence. */
function seededEventId(dice: Dice, ts: number): string {
  const time = ts.toString(16).padStart(12, '0').slice(-12);
  const variant = (8 + dice.int(4)).toString(16);
  return `${time.slice(0, 8)}-${time.slice(8)}-7${dice.hex(3)}-${variant}${dice.hex(3)}-${dice.hex(12)}`;
}

/** SQL text for one access; the tables it names are returned with it, target first. */
class SqlWriter {
  constructor(
    private readonly dice: Dice,
    private readonly tables: readonly string[],
  ) {}

  #table(): string {
    return this.dice.skewed(this.tables);
  }

  #columns(n: number, alias = ''): string {
    const prefix = alias === '' ? '' : `${alias}.`;
    const cols = new Set<string>();
    while (cols.size < n) cols.add(prefix + this.dice.pick(COLUMNS));
    return [...cols].join(', ');
  }

  #day(ts: number, daysBack = 0): string {
    return new Date(ts - daysBack * DAY_MS).toISOString().slice(0, 10);
  }

  #predicate(ts: number, alias = ''): string {
    const p = alias === '' ? '' : `${alias}.`;
    const parts = [`${p}dt = '${this.#day(ts, this.dice.int(3))}'`];
    if (this.dice.chance(0.5)) parts.push(`${p}region = '${this.dice.pick(REGIONS)}'`);
    if (this.dice.chance(0.3)) parts.push(`${p}status IN ('${this.dice.pick(STATUSES)}', '${this.dice.pick(STATUSES)}')`);
    if (this.dice.chance(0.25)) parts.push(`${p}amount > ${this.dice.int(5000)}`);
    return parts.join(' AND ');
  }

  select(ts: number): { query: string; tables: string[] } {
    const shape = this.dice.weighted([
      ['filter', 40],
      ['aggregate', 25],
      ['join', 20],
      ['join3', 7],
      ['cte', 8],
    ] as const);
    const a = this.#table();
    if (shape === 'filter') {
      return { query: `SELECT ${this.#columns(2 + this.dice.int(5))} FROM ${a} WHERE ${this.#predicate(ts)} LIMIT ${this.dice.pick([100, 1000, 10000])}`, tables: [a] };
    }
    if (shape === 'aggregate') {
      return {
        query: `SELECT region, count(*) AS n, sum(amount) AS total FROM ${a} WHERE dt BETWEEN '${this.#day(ts, 7)}' AND '${this.#day(ts)}' GROUP BY region ORDER BY n DESC`,
        tables: [a],
      };
    }
    const b = this.#table();
    if (shape === 'join') {
      return {
        query: `SELECT ${this.#columns(2, 'a')}, ${this.#columns(2, 'b')} FROM ${a} a JOIN ${b} b ON a.customer_id = b.customer_id WHERE ${this.#predicate(ts, 'a')}`,
        tables: [a, b],
      };
    }
    const c = this.#table();
    if (shape === 'join3') {
      return {
        query:
          `SELECT a.id, b.status, c.amount FROM ${a} a JOIN ${b} b ON a.id = b.order_id ` +
          `LEFT JOIN ${c} c ON b.account_id = c.account_id WHERE ${this.#predicate(ts, 'a')} ORDER BY c.amount DESC LIMIT 500`,
        tables: [a, b, c],
      };
    }
    return {
      query:
        `WITH recent AS (SELECT customer_id, max(created_at) AS last_seen FROM ${a} WHERE dt >= '${this.#day(ts, 30)}' GROUP BY customer_id) ` +
        `SELECT r.customer_id, r.last_seen, b.${this.dice.pick(COLUMNS)} FROM recent r JOIN ${b} b ON r.customer_id = b.customer_id`,
      tables: [a, b],
    };
  }

  write(action: Action, ts: number): { query: string; tables: string[] } {
    const target = this.#table();
    const source = this.#table();
    switch (action) {
      case 'data:Insert':
        return {
          query: `INSERT INTO ${target} SELECT ${this.#columns(3 + this.dice.int(4))} FROM ${source} WHERE ${this.#predicate(ts)}`,
          tables: [target, source],
        };
      case 'data:Write':
        return this.dice.chance(0.5)
          ? {
              query: `INSERT OVERWRITE TABLE ${target} PARTITION (dt = '${this.#day(ts)}') SELECT ${this.#columns(4)} FROM ${source} WHERE dt = '${this.#day(ts)}'`,
              tables: [target, source],
            }
          : {
              query:
                `MERGE INTO ${target} t USING ${source} s ON t.id = s.id ` +
                `WHEN MATCHED THEN UPDATE SET t.status = s.status, t.updated_at = s.updated_at WHEN NOT MATCHED THEN INSERT *`,
              tables: [target, source],
            };
      case 'data:CreateTable':
        return this.dice.chance(0.6)
          ? {
              query: `CREATE TABLE ${target}_tmp_${this.dice.hex(4)} AS SELECT ${this.#columns(3)} FROM ${source} WHERE ${this.#predicate(ts)}`,
              tables: [target, source],
            }
          : {
              query: `CREATE TABLE IF NOT EXISTS ${target} (id bigint, customer_id bigint, amount decimal(18,2), region varchar, dt date) WITH (format = 'PARQUET', partitioning = ARRAY['dt'])`,
              tables: [target],
            };
      case 'data:Delete':
        return { query: `DELETE FROM ${target} WHERE dt < '${this.#day(ts, 90 + this.dice.int(300))}'`, tables: [target] };
      case 'data:AlterTable':
        return { query: `ALTER TABLE ${target} ADD COLUMN ${this.dice.pick(COLUMNS)}_v${1 + this.dice.int(9)} varchar`, tables: [target] };
      case 'data:DropTable':
        return { query: `DROP TABLE IF EXISTS ${target}`, tables: [target] };
      case 'data:Select':
        return this.select(ts);
    }
  }
}

/**
 * Creates a generator. Example: `createEventGenerator({ seed: 42, startTs, spanMs: 30 * DAY, count: 1_000_000 })`
 * gives a million events in arrival order over 30 days.
 */
export function createEventGenerator(options: EventGeneratorOptions): EventGenerator {
  const startTs = options.startTs ?? DEFAULT_START_TS;
  const spanMs = options.spanMs ?? DAY_MS;
  const jitterMs = options.jitterMs ?? 2000;
  const denyRate = options.denyRate ?? 0.03;
  const { count } = options;
  if (!Number.isSafeInteger(startTs) || startTs < 0) throw new TypeError(`startTs must be a non-negative integer, got ${startTs}`);
  if (!Number.isSafeInteger(spanMs) || spanMs < 1) throw new TypeError(`spanMs must be a positive integer, got ${spanMs}`);
  if (count !== undefined && (!Number.isSafeInteger(count) || count < 1)) throw new TypeError(`count must be a positive integer, got ${count}`);
  // The catalog comes from its own stream so it stays the same whatever the event options are.
  const catalogDice = new Dice(mulberry32(options.seed ^ 0x5eed));
  const users = buildUsers(catalogDice, options.userCount ?? 200);
  const tables = buildTables(catalogDice, options.tableCount ?? 2000);
  const serviceUsers = users.filter((u) => u.startsWith('svc-'));
  const dice = new Dice(mulberry32(options.seed));
  const sql = new SqlWriter(dice, tables);
  let generated = 0;

  const eventTime = (): number => {
    if (count === undefined) return startTs + dice.int(spanMs);
    const onTime = startTs + Math.floor((generated * spanMs) / count);
    return Math.max(startTs, onTime - dice.int(jitterMs + 1));
  };

  const next = (): GeneratedEvent => {
    const ts = eventTime();
    const engine = dice.weighted(ENGINES);
    // Service accounts run most writes; people mostly read.
    const action = dice.weighted(ACTIONS_BY_ENGINE[engine]);
    const userId = action !== 'data:Select' && serviceUsers.length > 0 && dice.chance(0.7) ? dice.pick(serviceUsers) : dice.skewed(users);
    const { query, tables: touched } = action === 'data:Select' ? sql.select(ts) : sql.write(action, ts);
    const deny = dice.chance(denyRate);
    const details = deny
      ? dice.pick(DENY_REASONS)(engine)
      : `queryId=${new Date(ts).toISOString().slice(0, 10).replaceAll('-', '')}_${dice.hex(6)}_${String(dice.int(99999)).padStart(5, '0')} client=${dice.pick(CLIENTS)}`;
    const event: GeneratedEvent = {
      source: engine,
      userId,
      action,
      resource: touched[0] ?? '',
      tables: touched,
      query,
      decision: deny ? 'DENY' : 'ALLOW',
      details,
      ts,
    };
    if (options.eventIds) event.eventId = seededEventId(dice, ts);
    generated++;
    return event;
  };

  return {
    next,
    batch(n: number): GeneratedEvent[] {
      if (!Number.isSafeInteger(n) || n < 0) throw new TypeError(`batch size must be a non-negative integer, got ${n}`);
      const events: GeneratedEvent[] = [];
      for (let i = 0; i < n; i++) events.push(next());
      return events;
    },
    get generated() {
      return generated;
    },
    users,
    tables,
  };
}
