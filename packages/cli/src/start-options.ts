import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { AuditError, AuditErrorCode, CONFIG_KEYS, parseProperties, resolveConfig, type NodeConfig } from '@auditlake/model';
import { shownRedisUrl } from './redis-url.js';

export const START_USAGE = `usage: auditlake start [options]

Runs one node: the HTTP API and Admin UI, the local LevelDB store, and (as leader) tiering.

options:
  --data-dir DIR            where the node keeps its store, node id and admin token (default ./data)
  --host ADDR               address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)
  --port N                  HTTP port (default 7070; 0 picks a free one)
  --config FILE             a Java-properties file of auditlake.* configuration keys
  --set key=value           one configuration key, over the file; repeat for more
  --node-id ID              this node's id in a cluster (default: generated once, kept in the data dir)
  --advertise URL           the URL other nodes reach this one at (default http://<host>:<port>)
  --coordinator URL         redis://HOST:PORT of the Redis that nodes of one cluster share;
                            without it the node is a cluster of one, its own leader; with a
                            password (redis://:PASSWORD@HOST:PORT) give it in
                            AUDITLAKE_COORDINATOR instead, out of the process list
  --embedded-s3             also run an S3 endpoint in this process (bucket auditlake, S3
                            connection 'local', Iceberg catalog 'local'), so tiering can be
                            tried without a cloud account; the default Iceberg table is then
                            local.ops.audit_events; every request must be signed (SigV4) with
                            the node's key pair
  --embedded-s3-port N      its port (default: the HTTP port + 1)
  --embedded-s3-public-read also serve unsigned GET/HEAD of objects (never listings, writes
                            or deletes), for readers that cannot sign
  --log-level LEVEL         fatal, error, warn, info (default) or debug (adds a line per request)
  --help, -h                print this help

environment:
  AUDITLAKE_ADMIN_TOKEN     the built-in admin's token (else one is generated into the data dir)
  AUDITLAKE_INGEST_TOKEN    the built-in ingest principal's token
  AUDITLAKE_COORDINATOR     the --coordinator URL, when the option is not given
  AUDITLAKE_CLUSTER_SECRET  auditlake.cluster.secret (the same on every node of a cluster: peer
                            requests are signed with it), when no file or --set gives it
  AUDITLAKE_EMBEDDED_S3_ACCESS_KEY, AUDITLAKE_EMBEDDED_S3_SECRET_KEY
                            the embedded S3 endpoint's key pair (else generated into the data dir)`;

/** The default Iceberg table when the embedded S3 endpoint runs (its catalog is `local`). */
export const EMBEDDED_ICEBERG_TABLE = 'local.ops.audit_events';
/** The environment variable `--coordinator` may be given in instead. */
export const COORDINATOR_ENV = 'AUDITLAKE_COORDINATOR';
/** The environment variable `auditlake.cluster.secret` may be given in. */
export const CLUSTER_SECRET_ENV = 'AUDITLAKE_CLUSTER_SECRET';
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface StartOptions {
  dataDir: string;
  host: string;
  port: number;
  config: NodeConfig;
  nodeId?: string;
  advertiseUrl?: string;
  coordinatorUrl?: string;
  /** Set with --embedded-s3: the embedded S3 endpoint's port. */
  embeddedS3Port?: number;
  /** --embedded-s3-public-read: unsigned GET/HEAD of objects are served too. */
  embeddedS3PublicRead: boolean;
  logLevel: string;
}

function usageError(message: string): AuditError {
  return new AuditError(AuditErrorCode.CONFIG_INVALID, `${message}\n${START_USAGE}`);
}

function parsePort(flag: string, value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) throw usageError(`${flag} must be a port number from 0 to 65535: ${value}`);
  return port;
}

/** The known key a prefix-less one most likely means (`audit.x` or a setting's `x`), if any. */
function prefixedKey(key: string): string | undefined {
  const known = new Set(Object.values(CONFIG_KEYS).flatMap((spec: { key: string; aliases?: readonly string[] }) => [spec.key, ...(spec.aliases ?? [])]));
  return [`auditlake.${key}`, `auditlake.audit.${key}`].find((candidate) => known.has(candidate));
}

/**
 * Parses `auditlake start` arguments: the properties file first, then every `--set`
 * (later wins), into a validated configuration. Throws a coded error naming the bad input.
 */
export function parseStartOptions(args: string[], env: NodeJS.ProcessEnv = {}): StartOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        'data-dir': { type: 'string', default: './data' },
        host: { type: 'string', default: '127.0.0.1' },
        port: { type: 'string', default: '7070' },
        config: { type: 'string' },
        set: { type: 'string', multiple: true, default: [] },
        'node-id': { type: 'string' },
        advertise: { type: 'string' },
        coordinator: { type: 'string' },
        'embedded-s3': { type: 'boolean', default: false },
        'embedded-s3-port': { type: 'string' },
        'embedded-s3-public-read': { type: 'boolean', default: false },
        'log-level': { type: 'string', default: 'info' },
      },
    });
  } catch (err) {
    throw usageError((err as Error).message);
  }
  const v = parsed.values;
  // From the environment when not on the command line: a URL with the coordinator's password
  // is then not in the process list (README, "Security model").
  const fromEnv = v.coordinator === undefined && env[COORDINATOR_ENV] !== undefined && env[COORDINATOR_ENV] !== '';
  const coordinator = v.coordinator ?? (fromEnv ? env[COORDINATOR_ENV] : undefined);
  if (coordinator !== undefined && !/^rediss?:\/\/[^/]+/.test(coordinator)) {
    throw usageError(`${fromEnv ? COORDINATOR_ENV : '--coordinator'} must be a Redis URL (redis://host:port): ${shownRedisUrl(coordinator)}`);
  }

  const props = new Map<string, string>();
  if (v.config !== undefined) {
    let text: string;
    try {
      text = readFileSync(v.config, 'utf8');
    } catch (err) {
      throw usageError(`--config ${v.config}: ${(err as Error).message}`);
    }
    for (const [key, value] of parseProperties(text)) {
      // A shared file may hold other programs' keys, passed over; but one of ours without its
      // prefix (`audit.retention.days`) is a mistake that would leave the setting unapplied.
      const meant = key.startsWith('auditlake.') ? undefined : prefixedKey(key);
      if (meant !== undefined) throw usageError(`--config ${v.config}: ${key}: unknown configuration key; every key starts with auditlake. (did you mean ${meant}?)`);
      props.set(key, value);
    }
  }
  for (const assignment of v.set) {
    const eq = assignment.indexOf('=');
    if (eq <= 0) throw usageError(`--set must be key=value: ${assignment}`);
    const key = assignment.slice(0, eq).trim();
    // resolveConfig passes over keys outside auditlake.* (a shared properties file may hold
    // other programs' keys), but a --set is meant for this node: a key without the prefix
    // would otherwise be dropped without a word. The config layer has no prefix-less form.
    if (!key.startsWith('auditlake.')) {
      const meant = prefixedKey(key);
      throw usageError(`--set ${key}: unknown configuration key; every key starts with auditlake.${meant === undefined ? '' : ` (did you mean ${meant}?)`}`);
    }
    props.set(key, assignment.slice(eq + 1).trim());
  }
  // The cluster secret from the environment, out of the process list; a file or --set wins.
  const clusterSecret = env[CLUSTER_SECRET_ENV];
  // Set but blank is refused, not read as "no secret" (which leaves peer requests unsigned).
  if (clusterSecret !== undefined && clusterSecret.trim() === '') throw usageError(`${CLUSTER_SECRET_ENV} is set but empty: give it the cluster's secret (32 or more characters), or unset it to run without one`);
  if (clusterSecret !== undefined && !props.has('auditlake.cluster.secret')) props.set('auditlake.cluster.secret', clusterSecret);
  // With the embedded endpoint, the default Iceberg table is in its catalog, so switching
  // tiering to iceberg works without naming a table first.
  if (v['embedded-s3'] && !props.has('auditlake.audit.tier.iceberg.table')) props.set('auditlake.audit.tier.iceberg.table', EMBEDDED_ICEBERG_TABLE);
  if (!LOG_LEVELS.includes(v['log-level'])) throw usageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}: ${v['log-level']}`);
  const options: StartOptions = {
    dataDir: v['data-dir'],
    host: v.host,
    port: parsePort('--port', v.port),
    config: resolveConfig(props),
    embeddedS3PublicRead: v['embedded-s3-public-read'],
    logLevel: v['log-level'],
  };
  if (v['node-id'] !== undefined) options.nodeId = v['node-id'];
  if (v.advertise !== undefined) options.advertiseUrl = v.advertise;
  if (coordinator !== undefined) options.coordinatorUrl = coordinator;
  if (v['embedded-s3-port'] !== undefined && !v['embedded-s3']) throw usageError('--embedded-s3-port needs --embedded-s3');
  if (v['embedded-s3-public-read'] && !v['embedded-s3']) throw usageError('--embedded-s3-public-read needs --embedded-s3');
  if (v['embedded-s3']) {
    // Default: the HTTP port + 1 (any free port when the HTTP port is 0).
    if (v['embedded-s3-port'] === undefined && options.port === 65535) {
      throw usageError('--embedded-s3 listens on the --port + 1, and --port 65535 leaves no port after it: give --embedded-s3-port N, or a lower --port');
    }
    options.embeddedS3Port = v['embedded-s3-port'] !== undefined ? parsePort('--embedded-s3-port', v['embedded-s3-port']) : options.port === 0 ? 0 : options.port + 1;
    if (options.embeddedS3Port !== 0 && options.embeddedS3Port === options.port) {
      throw usageError(`--embedded-s3-port ${options.embeddedS3Port} is also --port: the HTTP API and the embedded S3 endpoint need a port each`);
    }
  }
  return options;
}
