import { AuditErrorCode } from './audit-error.js';
import {
  boolean,
  configError,
  fraction,
  hostNames,
  integer,
  nonNegativeInt,
  orphanMinAge,
  parseNamed,
  positiveInt,
  text,
  type ValueParser,
} from './config-values.js';
import { SOURCE_ID_LENGTH_MAX } from './field-limits.js';
import { checkS3Location, icebergNameProblem } from './tier-location.js';
import { DEFAULT_REDACT_KEYS, redactKeyList } from './redaction.js';
import { cronExpression } from './cron-expression.js';
import { tierMode } from './tier-mode.js';

interface KeySpec<T> {
  key: string;
  defaultValue: string;
  parse: ValueParser<T>;
  /** Other names accepted for the same key (the reference's, where ours differs). */
  aliases?: readonly string[];
}

function spec<T>(key: string, defaultValue: string, parse: ValueParser<T>, aliases?: readonly string[]): KeySpec<T> {
  return { key, defaultValue, parse, ...(aliases ? { aliases } : {}) };
}

/**
 * Every scalar configuration key: the reference's `ontul.*` keys as `auditlake.*` with the
 * same defaults, then ours. Durations end in `.ms` and can all be shortened with `--set`.
 * A runtime setting `audit.x` is configured as `auditlake.audit.x` (one name for both); the
 * reference calls the retention cap `audit.log.retention.days` in its configuration, and that
 * name is accepted too.
 */
export const CONFIG_KEYS = {
  retentionDays: spec('auditlake.audit.retention.days', '90', positiveInt, ['auditlake.audit.log.retention.days']),
  readEnabled: spec('auditlake.audit.read.enabled', 'true', boolean),
  readSampleRate: spec('auditlake.audit.read.sample.rate', '1.0', fraction),
  tierMode: spec('auditlake.audit.tier.mode', 'none', tierMode),
  tierIcebergTable: spec('auditlake.audit.tier.iceberg.table', 'ice.ops.audit_events', text),
  tierParquetPath: spec('auditlake.audit.tier.parquet.path', '', text),
  tierConnectionId: spec('auditlake.audit.tier.connectionId', '', text),
  tierRetainLocalDays: spec('auditlake.audit.tier.retain.local.days', '7', nonNegativeInt),
  tierIntervalMs: spec('auditlake.audit.tier.interval.ms', '300000', positiveInt),
  tierBatchSize: spec('auditlake.audit.tier.batch.size', '5000', positiveInt),
  tierSettleMs: spec('auditlake.audit.tier.ingest.settle.ms', '2000', nonNegativeInt),
  /**
   * Worker threads that encode tier files (the sweep's data files, compaction's rewrites) off
   * the event loop; 0 encodes inline. Encoding is most of a sweep's CPU, and on the event loop
   * it competes with ingest, so the sweep could not keep up with it. From two, each file is
   * encoded on two threads at once (split by columns, the same bytes). One by default: on a
   * 2-core machine the split was no faster per 5,000-event file (53–57 ms against 51–55 ms on
   * one thread, quiet machine): handing the columns over costs what the second thread saves.
   */
  tierEncodeThreads: spec('auditlake.audit.tier.encode.threads', '1', nonNegativeInt),
  tierBackoffInitialMs: spec('auditlake.audit.tier.backoff.initial.ms', '30000', positiveInt),
  tierBackoffMaxMs: spec('auditlake.audit.tier.backoff.max.ms', '600000', positiveInt),
  viewerMaxPage: spec('auditlake.audit.viewer.max.page', '5000', positiveInt),
  /** How long one search (a page, an NDJSON answer, stats) may read before it is stopped (503 AUDIT_SEARCH_TIMEOUT). */
  searchTimeoutMs: spec('auditlake.audit.search.timeout.ms', '60000', positiveInt),
  /** Key names whose values are masked in `query` and `details` at ingest ('' turns masking off). */
  redactKeys: spec('auditlake.audit.redact.keys', DEFAULT_REDACT_KEYS.join(','), redactKeyList),
  maintenanceEnabled: spec('auditlake.audit.tier.maintenance.enabled', 'true', boolean),
  maintenanceCron: spec('auditlake.audit.tier.maintenance.cron', '0 * * * *', cronExpression),
  maintenanceSnapshotRetainLast: spec('auditlake.audit.tier.maintenance.snapshot.retain.last', '24', positiveInt),
  maintenanceRemoveOrphanFiles: spec('auditlake.audit.tier.maintenance.remove.orphan.files', 'true', boolean),
  /** Orphan cleanup spares files younger than this: a commit may still be writing them (3 days; at least 1 hour). */
  maintenanceOrphanMinAgeMs: spec('auditlake.audit.tier.maintenance.orphan.min.age.ms', String(3 * 24 * 60 * 60 * 1000), orphanMinAge),
  /** Compaction writes files near this size (16 MiB: a file's rows are held in memory while written). */
  maintenanceTargetFileSizeBytes: spec('auditlake.audit.tier.maintenance.target.file.size.bytes', String(16 * 1024 * 1024), positiveInt),
  /** metadata-log entries (and so old vN.metadata.json files) a table keeps, as Java's write.metadata.previous-versions-max. */
  maintenanceMetadataPreviousVersionsMax: spec('auditlake.audit.tier.maintenance.metadata.previous.versions.max', '100', positiveInt),
  /**
   * How long a maintenance run goes on starting compaction passes (256 MiB of small files each)
   * while the last one left some: 15 minutes, a quarter of the hourly default cron (lake's
   * COMPACTION_RUN_TIME_BUDGET_MS). Node configuration, not a runtime setting: it bounds this
   * node's work, as the tier batch size does.
   */
  maintenanceCompactionTimeBudgetMs: spec('auditlake.audit.tier.maintenance.compaction.time.budget.ms', String(15 * 60 * 1000), positiveInt),
  forwardMaxAttempts: spec('auditlake.metadata.forward.max.attempts', '5', positiveInt),
  forwardQueueCapacity: spec('auditlake.metadata.forward.queue.capacity', '10000', positiveInt),
  leaseTtlMs: spec('auditlake.cluster.lease.ttl.ms', '3000', positiveInt),
  /** Redis keys live under `auditlake:<name>:`, so clusters can share one Redis. */
  clusterName: spec('auditlake.cluster.name', 'default', text),
  /** How long `POST /v1/api/audit?ack=replicated` waits for a standby before answering 503. */
  ackReplicatedTimeoutMs: spec('auditlake.ingest.ack.replicated.timeout.ms', '5000', positiveInt),
  /**
   * How long ingest waits for the tier to find the copy of an event that may re-send one
   * retention deleted (a turn to look included), before storing it as new: a bucket that drops packets must not hold
   * ingest for TCP's timeouts, and a slow tier must not make a lookup give up too soon. Below
   * the 10 s a standby gives the leader to answer a forward, which waits for the lookup.
   */
  resendLookupTimeoutMs: spec('auditlake.ingest.resend.lookup.timeout.ms', '5000', positiveInt),
  /**
   * Such lookups that may run at once (one past its timeout counts until it ends); 16 times as
   * many may wait for a turn, and a request beyond that is refused with 429 (nothing stored).
   * Bounds what clients sending old-timed events can make the node read from the bucket.
   */
  resendLookupConcurrency: spec('auditlake.ingest.resend.lookup.concurrency', '4', positiveInt),
  /**
   * How long after its event's time the eventId of a tiered event retention deleted is kept, so
   * that a re-send under it is judged against the tier's copy whatever its time. Bounds what the
   * ids take: ~50 bytes of disk and 1.5–3 of memory each (a million deletes a day: ~18 GB and
   * ~1 GB a year). Past it, a re-send is looked for only when timed at or before the newest
   * event retention deleted.
   */
  resendIdsKeepDays: spec('auditlake.ingest.resend.ids.keep.days', '30', positiveInt),
  /**
   * Worker threads that parse, validate and hash ingest bodies off the event loop (0: inline).
   * One by default: on the 2-core machine measured, one thread raised single-node ingest by
   * ~15% at the same CPU per event (it takes the chain's content hash off the loop too), and
   * inline parsing of a 500-event body was the longest task on the loop, which reads waited behind.
   */
  ingestParseThreads: spec('auditlake.ingest.parse.threads', '1', nonNegativeInt),
  /**
   * Debug only: shifts this node's wall clock (ingestTs) by this many ms, so a test can prove
   * ingestTs never goes backwards across a failover to a node whose clock is behind.
   */
  debugClockOffsetMs: spec('auditlake.debug.clock.offset.ms', '0', integer),
  /**
   * Debug only: the process kills itself (SIGKILL) after writing a tiering batch's data files
   * and before its commit, so a test can prove a successor tiers every event exactly once.
   */
  debugTierCrashBeforeCommit: spec('auditlake.debug.tier.crash.before.commit', 'false', boolean),
  /** Test hook: the node SIGKILLs itself when a table maintenance run reaches this step ('' = never). */
  debugMaintenanceCrashAt: spec('auditlake.debug.maintenance.crash.at', '', text),
  /**
   * Debug only: table maintenance's clock runs this many ms ahead of the node's, so a test can
   * have orphan cleanup find files past `orphan.min.age.ms` (at least an hour) without waiting.
   */
  debugMaintenanceClockOffsetMs: spec('auditlake.debug.maintenance.clock.offset.ms', '0', integer),
  /**
   * Keep the record chain (record and chain hashes with every event, verified by standbys).
   * On by default; off only to measure what it costs (docs/integrity.md).
   */
  integrityChainEnabled: spec('auditlake.audit.integrity.chain.enabled', 'true', boolean),
  /**
   * The leader signs a checkpoint after this many new records… 60,000: up to 1,000 events/s the
   * minute of the time rule comes first, and that minute is what bounds the unsigned tail. With
   * 10,000 a node at 1,000 events/s signed six a minute, 3 million checkpoint objects a year,
   * each held by `auditlake verify` while it checks a tier (about 0.7 KB).
   */
  integrityCheckpointEvents: spec('auditlake.audit.integrity.checkpoint.events', '60000', positiveInt),
  /** …or this long after the last checkpoint, when records came since. */
  integrityCheckpointIntervalMs: spec('auditlake.audit.integrity.checkpoint.interval.ms', '60000', positiveInt),
  /**
   * LevelDB's block cache of the node's store, in bytes (256 MiB): the uncompressed blocks that
   * searches read, so repeated investigations of recent days are served from memory. It fills
   * only as blocks are read.
   */
  storeCacheBytes: spec('auditlake.store.cache.bytes', String(256 * 1024 * 1024), positiveInt),
  /** How often the background retention prune runs. */
  retentionIntervalMs: spec('auditlake.audit.retention.interval.ms', '60000', positiveInt),
  /** Events deleted per prune batch; batches yield to ingest in between. */
  pruneBatchSize: spec('auditlake.audit.retention.prune.batch.size', '1000', positiveInt),
  /**
   * Host names `/health` and `/metrics` answer to besides IP addresses, `localhost` and the
   * node's own `--host` and advertised names: a request naming any other Host is refused, so a
   * web page cannot read them through DNS rebinding (docs/http-api.md, "Host names").
   */
  allowedHosts: spec('auditlake.http.allowed.hosts', '', hostNames),
  /** Largest accepted ingest body. */
  bodyLimitBytes: spec('auditlake.http.body.limit.bytes', String(8 * 1024 * 1024), positiveInt),
  /**
   * Most bytes of request bodies all requests may hold at once (a body sent without a length
   * counts as the body limit); past it a request with a body is refused, retryable (429), before
   * any of it is read. 32 bodies at the default body limit.
   */
  bodyInflightMaxBytes: spec('auditlake.http.body.inflight.max.bytes', String(256 * 1024 * 1024), positiveInt),
  /** The part of that one client (an IPv4 address, an IPv6 /64) may hold: 8 bodies at the default body limit (behind a proxy, raise it). */
  bodyInflightPerClientMaxBytes: spec('auditlake.http.body.inflight.per.client.max.bytes', String(64 * 1024 * 1024), positiveInt),
  /** How long a request's body may take to arrive once its headers have; then its connection is closed (the request never answered). */
  bodyTimeoutMs: spec('auditlake.http.body.timeout.ms', '60000', positiveInt),
  /**
   * Most HTTP connections open at once; past it a new one takes the place of the oldest open one
   * not in a request (server/connection-limits.ts), or is closed as it arrives when every one is.
   * Without a cap, idle connections from anyone took every file descriptor, and LevelDB then
   * failed its writes ("Too many open files"): keep the process's descriptor limit well above this.
   */
  httpConnectionsMax: spec('auditlake.http.connections.max', '4096', positiveInt),
  /** Most connections one client (an IPv4 address, an IPv6 /64) may hold at once (behind a proxy, raise it: every client is the proxy). */
  httpConnectionsPerClientMax: spec('auditlake.http.connections.per.client.max', '1024', positiveInt),
  /** Refused-access events recorded per second at most (the rest are counted, not stored). */
  denyAuditPerSecond: spec('auditlake.auth.deny.audit.per.second', '20', nonNegativeInt),
  /**
   * Refused requests (401/403) per client address per window answered and recorded one by one;
   * past it the client gets 429 with Retry-After, and the rest of its window is recorded as one
   * summary DENY event.
   */
  refusalsPerClientMax: spec('auditlake.auth.refusals.per.client.max', '20', positiveInt),
  refusalsWindowMs: spec('auditlake.auth.refusals.window.ms', '60000', positiveInt),
  jwtSecret: spec('auditlake.auth.jwt.secret', '', text),
  /**
   * The secret every node of a cluster is configured with, never stored in the coordinator: peer
   * requests are signed with it and their answers prove it, so reading the coordinator (which
   * holds the cluster token) no longer opens the internal endpoints. Empty: the token alone, as
   * before. At least 32 characters.
   */
  clusterSecret: spec('auditlake.cluster.secret', '', text),
  /**
   * When set, a JWT must carry this `iss` (and `aud` naming the audience): a token the same
   * secret signed for another service, or by another issuer sharing it, is refused. Empty: not
   * checked, as before.
   */
  jwtIssuer: spec('auditlake.auth.jwt.issuer', '', text),
  jwtAudience: spec('auditlake.auth.jwt.audience', '', text),
  /**
   * The embedded S3 endpoint's key pair (`--embedded-s3`); empty: generated at first start into
   * the data dir. `AUDITLAKE_EMBEDDED_S3_ACCESS_KEY` / `_SECRET_KEY` override both.
   */
  embeddedS3AccessKey: spec('auditlake.embedded.s3.access.key', '', text),
  embeddedS3SecretKey: spec('auditlake.embedded.s3.secret.key', '', text),
} as const;

type ConfigKeys = typeof CONFIG_KEYS;
type ScalarConfig = { readonly [K in keyof ConfigKeys]: ReturnType<ConfigKeys[K]['parse']> };

export type Role = 'admin' | 'ingest';

/** A configured secret credential: an `auth.tokens` entry or an `auth.access.keys` entry. */
export interface CredentialConfig {
  name: string;
  role: Role;
  secret: string;
}

export interface S3ConnectionConfig {
  id: string;
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
}

export interface IcebergCatalogConfig {
  name: string;
  warehouse: string;
  connectionId: string;
}

export interface NodeConfig extends ScalarConfig {
  /** `auditlake.auth.tokens`: `name:role:token[,…]`, used with `Authorization: Token`. */
  readonly tokens: readonly CredentialConfig[];
  /** `auditlake.auth.access.keys`: `id:role:secret[,…]`, used with `Authorization: AccessKey id:secret`. */
  readonly accessKeys: readonly CredentialConfig[];
  readonly s3Connections: ReadonlyMap<string, S3ConnectionConfig>;
  readonly icebergCatalogs: ReadonlyMap<string, IcebergCatalogConfig>;
  /**
   * `auditlake.ingest.sources.<principal>=<sourceId>[,…]`: the sourceIds each principal may send
   * (docs/integrity.md, "Who may send a sourceId"). Empty: sourceIds are not bound, any
   * principal may send any. Once one binding is configured, an event's sourceId must be bound
   * to the principal that sends it, whatever its role.
   */
  readonly sourceBindings: ReadonlyMap<string, readonly string[]>;
}

const MAP_PREFIXES = ['auditlake.s3.connections.', 'auditlake.iceberg.catalogs.'];
const LIST_KEYS = ['auditlake.auth.tokens', 'auditlake.auth.access.keys'];
export const SOURCE_BINDING_PREFIX = 'auditlake.ingest.sources.';

/**
 * What a sourceId reads as to a person: NFKC-folded, without white space or invisible
 * characters, lower-cased (as `isSelfSource` compares sources).
 */
function sourceIdReading(id: string): string {
  return id.normalize('NFKC').replace(/[\p{White_Space}\p{Default_Ignorable_Code_Point}]/gu, '').toLowerCase();
}

/**
 * `auditlake.ingest.sources.<principal>` keys. Each names a principal (a token's or access
 * key's name, a JWT's `sub`) and the sourceIds it alone may send, comma-separated. Refused: an
 * empty principal or list, an empty, over-long or not well-formed id, one holding a control or
 * invisible character, and two different ids that read alike (case, width, white space,
 * invisible characters): an operator reading the ledger could not tell their sources apart.
 * One id may be bound to several principals (a source moving to a new credential).
 */
function parseSourceBindings(props: ReadonlyMap<string, string>): Map<string, string[]> {
  const bindings = new Map<string, string[]>();
  const readings = new Map<string, string>();
  for (const [key, value] of props) {
    if (!key.startsWith(SOURCE_BINDING_PREFIX)) continue;
    const principal = key.slice(SOURCE_BINDING_PREFIX.length);
    if (principal === '') throw configError(`configuration key ${key} must be ${SOURCE_BINDING_PREFIX}<principal> (a token's or access key's name, or a JWT sub)`);
    const ids = value.split(',').map((id) => id.trim());
    if (value.trim() === '' || ids.some((id) => id === '')) throw configError(`${key} must be a comma-separated list of non-empty sourceIds, got ${JSON.stringify(value)}`);
    for (const id of ids) {
      if (id.length > SOURCE_ID_LENGTH_MAX) throw configError(`${key}: sourceId must be at most ${SOURCE_ID_LENGTH_MAX} characters, got ${id.length}`);
      if (!id.isWellFormed() || /[\p{Cc}\p{Default_Ignorable_Code_Point}]/u.test(id)) {
        throw configError(`${key}: sourceId ${JSON.stringify(id)} holds a control or invisible character or a lone surrogate`);
      }
      const reading = sourceIdReading(id);
      const other = readings.get(reading);
      if (other !== undefined && other !== id) throw configError(`${key}: sourceIds ${JSON.stringify(other)} and ${JSON.stringify(id)} read alike (case, width or white space); bind one spelling`);
      readings.set(reading, id);
    }
    bindings.set(principal, [...new Set(ids)]);
  }
  return bindings;
}

function parseCredentials(key: string, value: string): CredentialConfig[] {
  if (value.trim() === '') return [];
  return value.split(',').map((entry, index) => {
    const parts = entry.trim().split(':');
    const [name, role, ...rest] = parts;
    const secret = rest.join(':');
    if (!name || !role || !secret) throw configError(`${key} entries must be name:role:secret, got an entry with ${parts.length} part(s)`);
    // The role is not repeated: an entry written name:secret:role has the secret there, and
    // this message goes to standard error and on into whatever log collects it (review).
    if (role !== 'admin' && role !== 'ingest') throw configError(`${key} entry ${index + 1} (${name}): its second part must be the role, admin or ingest (entries are name:role:secret; the part is not repeated here, as it may be a secret in the wrong place)`);
    return { name, role, secret };
  });
}

function collectGroups(props: ReadonlyMap<string, string>, prefix: string): Map<string, Map<string, string>> {
  const groups = new Map<string, Map<string, string>>();
  for (const [key, value] of props) {
    if (!key.startsWith(prefix)) continue;
    const rest = key.slice(prefix.length);
    const dot = rest.lastIndexOf('.');
    if (dot <= 0) throw configError(`configuration key ${key} must be ${prefix}<name>.<field>`);
    const name = rest.slice(0, dot);
    const group = groups.get(name) ?? new Map<string, string>();
    group.set(rest.slice(dot + 1), value.trim());
    groups.set(name, group);
  }
  return groups;
}

function onlyFields(prefix: string, name: string, group: Map<string, string>, allowed: string[]): void {
  for (const field of group.keys()) {
    if (!allowed.includes(field)) throw configError(`unknown configuration key ${prefix}${name}.${field} (known fields: ${allowed.join(', ')})`);
  }
}

function parseS3Connections(props: ReadonlyMap<string, string>): Map<string, S3ConnectionConfig> {
  const prefix = MAP_PREFIXES[0] ?? '';
  const result = new Map<string, S3ConnectionConfig>();
  for (const [id, group] of collectGroups(props, prefix)) {
    onlyFields(prefix, id, group, ['endpoint', 'region', 'accessKeyId', 'secretAccessKey', 'forcePathStyle']);
    result.set(id, {
      id,
      endpoint: group.get('endpoint') ?? '',
      region: group.get('region') || 'us-east-1',
      accessKeyId: group.get('accessKeyId') ?? '',
      secretAccessKey: group.get('secretAccessKey') ?? '',
      forcePathStyle: parseNamed(`${prefix}${id}.forcePathStyle`, group.get('forcePathStyle') ?? 'true', boolean, AuditErrorCode.CONFIG_INVALID),
    });
  }
  return result;
}

function parseIcebergCatalogs(props: ReadonlyMap<string, string>): Map<string, IcebergCatalogConfig> {
  const prefix = MAP_PREFIXES[1] ?? '';
  const result = new Map<string, IcebergCatalogConfig>();
  for (const [name, group] of collectGroups(props, prefix)) {
    onlyFields(prefix, name, group, ['warehouse', 'connectionId']);
    const warehouse = group.get('warehouse') ?? '';
    const check = checkS3Location(warehouse);
    if (!check.ok) throw configError(`${prefix}${name}.warehouse must be s3://bucket/prefix: ${warehouse}: ${check.problem}`);
    const nameProblem = icebergNameProblem(name, 'catalog');
    if (nameProblem !== undefined) throw configError(`${prefix}${name}: ${nameProblem}`);
    result.set(name, { name, warehouse, connectionId: group.get('connectionId') ?? '' });
  }
  return result;
}

/**
 * Resolves properties (file, then `--set` overrides, already merged by the caller) into a typed
 * configuration. Unknown `auditlake.*` keys are refused so a misspelt key is never silently ignored.
 */
export function resolveConfig(props: ReadonlyMap<string, string> = new Map()): NodeConfig {
  const specs = Object.values(CONFIG_KEYS) as Array<KeySpec<unknown>>;
  const known = new Set<string>(specs.flatMap((s) => [s.key, ...(s.aliases ?? [])]));
  for (const key of props.keys()) {
    if (!key.startsWith('auditlake.')) continue;
    if (known.has(key) || LIST_KEYS.includes(key) || MAP_PREFIXES.some((p) => key.startsWith(p)) || key.startsWith(SOURCE_BINDING_PREFIX)) continue;
    throw configError(`unknown configuration key: ${key}`);
  }
  const scalars: Record<string, unknown> = {};
  for (const [name, s] of Object.entries(CONFIG_KEYS) as Array<[string, KeySpec<unknown>]>) {
    const given = [s.key, ...(s.aliases ?? [])].filter((key) => props.has(key));
    if (given.length > 1) throw configError(`${given.join(' and ')} name the same setting: set only ${s.key}`);
    const key = given[0] ?? s.key;
    scalars[name] = parseNamed(key, props.get(key) ?? s.defaultValue, s.parse, AuditErrorCode.CONFIG_INVALID);
  }
  const config = {
    ...(scalars as ScalarConfig),
    tokens: parseCredentials('auditlake.auth.tokens', props.get('auditlake.auth.tokens') ?? ''),
    accessKeys: parseCredentials('auditlake.auth.access.keys', props.get('auditlake.auth.access.keys') ?? ''),
    s3Connections: parseS3Connections(props),
    icebergCatalogs: parseIcebergCatalogs(props),
    sourceBindings: parseSourceBindings(props),
  };
  // Blank would mean "no secret": peer requests unsigned, without a word (a review's blank
  // environment variable, or an empty line in a shared file over a good one). Never repeated.
  if (props.has(CONFIG_KEYS.clusterSecret.key) && config.clusterSecret === '') {
    throw configError(`${CONFIG_KEYS.clusterSecret.key} is set but empty: give every node the same secret of 32 or more characters, or remove the setting to run without one`);
  }
  if ((config.embeddedS3AccessKey === '') !== (config.embeddedS3SecretKey === '')) {
    throw configError(`${CONFIG_KEYS.embeddedS3AccessKey.key} and ${CONFIG_KEYS.embeddedS3SecretKey.key} are set together or not at all`);
  }
  if (config.tierBackoffMaxMs < config.tierBackoffInitialMs) {
    throw configError(`${CONFIG_KEYS.tierBackoffMaxMs.key} must be at least ${CONFIG_KEYS.tierBackoffInitialMs.key}`);
  }
  return config;
}
