import { join } from 'node:path';
import { ClusterNode } from '@auditlake/cluster';
import { AuditError, AuditErrorCode, describeChanges, encodeEvent, type CredentialConfig, type NodeConfig } from '@auditlake/model';
import { AuditStore, CLUSTER_LOG_TAIL_BYTES, RetentionPruner } from '@auditlake/store';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { Authenticator } from './auth/authenticator.js';
import { DenyRecorder } from './auth/deny-recorder.js';
import { createHttpApp } from './http-app.js';
import { httpPeerTransport } from './http-peer-transport.js';
import { IngestParsePool } from './ingest-parse-pool.js';
import { IngestService } from './ingest-service.js';
import { clusterMembership, joiningMembership, singleNodeMembership, type Membership } from './membership.js';
import { NodeMetrics } from './metrics.js';
import { registerNodeGauges } from './node-gauges.js';
import { loadNodeId, loadOrCreateAdminToken, type AdminToken } from './node-identity.js';
import { storeReceived } from './received-events.js';
import { registerClusterRoute } from './routes/cluster-route.js';
import { registerHealthRoutes } from './routes/health-routes.js';
import { registerAdminUiRoutes } from './routes/admin-ui-routes.js';
import { loadAdminUiFiles } from './admin-ui/admin-ui-files.js';
import { registerIngestRoute } from './routes/ingest-route.js';
import { registerInternalRoutes } from './routes/internal-routes.js';
import { registerSearchRoute } from './routes/search-route.js';
import { registerStatsRoute } from './routes/stats-route.js';
import { AuditSearch } from './audit-search.js';
import { registerSettingsRoutes } from './routes/settings-route.js';
import { SettingsService } from './settings-service.js';
import { TieringService } from './tiering-service.js';
import { registerMaintenanceRoutes } from './routes/maintenance-routes.js';
import type { S3Credentials } from '@auditlake/s3-endpoint';
import { EMBEDDED_BUCKET, EMBEDDED_CATALOG, embeddedConnection, startEmbeddedS3, type EmbeddedS3 } from './embedded-s3.js';

export interface AuditNodeOptions {
  dataDir: string;
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  config: NodeConfig;
  nodeId?: string;
  /** URL peers use to reach this node; default `http://<host>:<port>`. */
  advertiseUrl?: string;
  /** `redis://host:port`: join the cluster coordinated there. Absent: a single node, its own leader. */
  coordinatorUrl?: string;
  /** `AUDITLAKE_ADMIN_TOKEN`: the built-in `admin` principal's token. */
  adminToken?: string;
  /** `AUDITLAKE_INGEST_TOKEN`: the built-in `ingest` principal's token. */
  ingestToken?: string;
  /** pino options or `false`; default false (tests), the CLI turns it on. */
  logger?: NonNullable<FastifyServerOptions['logger']>;
  /** Random source for read sampling; injected so a test can replay a run. */
  random?: () => number;
  /**
   * Run an S3 endpoint in this process on `host` at this port (0: any free port), backed by
   * `<dataDir>/s3`, registering S3 connection `local` and Iceberg catalog `local`.
   */
  embeddedS3Port?: number;
  /**
   * `AUDITLAKE_EMBEDDED_S3_ACCESS_KEY` / `_SECRET_KEY`: the embedded endpoint's key pair. Else
   * the configuration's `auditlake.embedded.s3.*.key`, else generated into the data dir.
   */
  embeddedS3Credentials?: S3Credentials;
  /** `--embedded-s3-public-read`: the embedded endpoint also serves unsigned GET/HEAD of objects. */
  embeddedS3PublicRead?: boolean;
}

/** A running node. `close()` stops it in the reverse order of opening; it is idempotent. */
export interface AuditNode extends AsyncDisposable {
  readonly url: string;
  readonly nodeId: string;
  /** The generated admin token when no admin credential was configured. */
  readonly adminToken: AdminToken | undefined;
  readonly store: AuditStore;
  readonly settings: SettingsService;
  readonly metrics: NodeMetrics;
  readonly membership: Membership;
  readonly tiering: TieringService;
  /** The embedded S3 endpoint, when started with one. */
  readonly embeddedS3: EmbeddedS3 | undefined;
  readonly app: FastifyInstance;
  close(): Promise<void>;
}

async function credentials(options: AuditNodeOptions): Promise<{ tokens: CredentialConfig[]; adminToken: AdminToken | undefined }> {
  const tokens = [...options.config.tokens];
  if (options.adminToken) tokens.push({ name: 'admin', role: 'admin', secret: options.adminToken });
  if (options.ingestToken) tokens.push({ name: 'ingest', role: 'ingest', secret: options.ingestToken });
  let adminToken: AdminToken | undefined;
  if (!tokens.some((t) => t.role === 'admin')) {
    adminToken = await loadOrCreateAdminToken(options.dataDir);
    tokens.push({ name: 'admin', role: 'admin', secret: adminToken.token });
  }
  return { tokens, adminToken };
}

/** With an embedded endpoint, connection `local` and catalog `local` point at it, with its credentials. */
function withEmbeddedS3(config: NodeConfig, embedded: EmbeddedS3): NodeConfig {
  const connection = embeddedConnection(embedded);
  return {
    ...config,
    s3Connections: new Map([...config.s3Connections, [connection.id, connection]]),
    icebergCatalogs: new Map([...config.icebergCatalogs, [EMBEDDED_CATALOG, { name: EMBEDDED_CATALOG, warehouse: `s3://${EMBEDDED_BUCKET}/warehouse`, connectionId: connection.id }]]),
  };
}

function embeddedS3Credentials(options: AuditNodeOptions): S3Credentials | undefined {
  if (options.embeddedS3Credentials) return options.embeddedS3Credentials;
  const { embeddedS3AccessKey, embeddedS3SecretKey } = options.config;
  return embeddedS3AccessKey !== '' ? { accessKeyId: embeddedS3AccessKey, secretAccessKey: embeddedS3SecretKey } : undefined;
}

/** The composition root: opens the store and every service on it, then listens. */
export async function startAuditNode(options: AuditNodeOptions): Promise<AuditNode> {
  // The endpoint starts before the HTTP app that logs for it.
  const late: { app?: FastifyInstance } = {};
  const credentials = embeddedS3Credentials(options);
  const embeddedS3 =
    options.embeddedS3Port === undefined
      ? undefined
      : await startEmbeddedS3({
          dataDir: options.dataDir,
          host: options.host,
          port: options.embeddedS3Port,
          ...(credentials ? { credentials } : {}),
          publicRead: options.embeddedS3PublicRead ?? false,
          onInternalError: (err) => late.app?.log.error({ err }, 'the embedded S3 endpoint failed a request'),
        });
  try {
    const node = await startWith(options, embeddedS3);
    late.app = node.app;
    return node;
  } catch (err) {
    await embeddedS3?.close();
    throw err;
  }
}

async function startWith(options: AuditNodeOptions, embeddedS3: EmbeddedS3 | undefined): Promise<AuditNode> {
  const config = embeddedS3 ? withEmbeddedS3(options.config, embeddedS3) : options.config;
  const nodeId = options.nodeId ?? (await loadNodeId(options.dataDir));
  const { tokens, adminToken } = await credentials(options);
  const coordinated = options.coordinatorUrl !== undefined;
  // A single node orders everything itself (term 0). A cluster node orders nothing until the
  // cluster has made it leader; until then what it receives goes to the outbox.
  let sequencer = (): number => {
    if (coordinated) throw new AuditError(AuditErrorCode.NOT_LEADER, 'this node has not joined its cluster yet', { retryable: true });
    return 0;
  };
  const store = await AuditStore.open({
    location: join(options.dataDir, 'store'),
    now: () => Date.now() + config.debugClockOffsetMs,
    sequencer: () => sequencer(),
    // A cluster node's standbys pull its log when it leads; a single node is never pulled from.
    logTailBytes: coordinated ? CLUSTER_LOG_TAIL_BYTES : 0,
  });
  const closers: Array<() => Promise<void>> = [...(embeddedS3 ? [() => embeddedS3.close()] : []), () => store.close()];
  const closeAll = async () => {
    for (const close of closers.reverse().splice(0)) await close();
  };
  try {
    const metrics = new NodeMetrics(
      () => store.sizeOnDiskBytes(),
      () => store.outboxCount,
    );
    const logger = options.logger ?? false;
    let url = '';
    let membership: Membership = coordinated ? joiningMembership() : singleNodeMembership(nodeId, () => url, store);
    const dynamicMembership = membershipProxy(() => membership);
    // Tiering and settings need each other (validation, status); the app logs for both.
    const late: { settings?: SettingsService; app?: FastifyInstance } = {};
    const tieringLog = { info: (o: object, m: string) => late.app?.log.info(o, m), warn: (o: object, m: string) => late.app?.log.warn(o, m) };
    const tiering = new TieringService({
      store,
      config,
      settings: () => {
        if (!late.settings) throw new Error('settings not loaded yet');
        return late.settings;
      },
      membership: dynamicMembership,
      metrics,
      log: tieringLog,
    });
    closers.push(() => tiering.close());
    const settings = await SettingsService.load(store, config, tiering.validator(config));
    late.settings = settings;
    const pruner = new RetentionPruner(store, {
      intervalMs: config.retentionIntervalMs,
      batchSize: config.pruneBatchSize,
      policy: (nowMs) => tiering.prunePolicy(nowMs),
      onPruned: (result) => {
        metrics.eventsPruned.inc(result.deleted);
        metrics.pruneRuns.inc(result.batches);
      },
    });
    closers.push(() => pruner.close());
    settings.onChange((_effective, changes) => {
      late.app?.log.info({ changes }, `Settings changed: ${describeChanges(changes)}`);
      if (changes.some((c) => c.key === 'audit.retention.days' || c.key.startsWith('audit.tier.'))) pruner.trigger().catch(() => undefined);
      // Every save refreshes the maintenance registrations (a renamed target is registered).
      tiering.maintenance.refresh().catch((err: unknown) => tieringLog.warn({ err: String(err) }, 'refreshing table maintenance failed'));
    });

    // Closed after the HTTP server (closers run in reverse), which first lets requests finish.
    const parser = new IngestParsePool(config.ingestParseThreads);
    closers.push(() => parser.close());
    const adminUi = loadAdminUiFiles();
    const denyRecorder = new DenyRecorder({
      perSecond: config.denyAuditPerSecond,
      perClientMax: config.refusalsPerClientMax,
      perClientWindowMs: config.refusalsWindowMs,
      record: async (event, freshId) => {
        await storeReceived(store, dynamicMembership, [encodeEvent(event)], new Set([freshId]));
      },
      onSuppressed: () => metrics.accessDeniedUnrecorded.inc(),
      onError: (err) => late.app?.log.warn({ err }, 'could not record refused access'),
    });
    // Closed after the HTTP server and before the store: it records the summaries of open windows.
    closers.push(() => denyRecorder.close());
    const app = createHttpApp({
      adminUi,
      bodyLimitBytes: config.bodyLimitBytes,
      authenticator: new Authenticator({ tokens, accessKeys: config.accessKeys, jwtSecret: config.jwtSecret }),
      denyRecorder,
      metrics,
      logger,
    });
    late.app = app;
    registerNodeGauges(metrics.registry, { tierStatus: () => tiering.status(), membership: dynamicMembership });
    closers.push(() => app.close());
    const ingest = new IngestService({
      parser,
      store,
      settings,
      metrics,
      membership: dynamicMembership,
      random: options.random ?? Math.random,
      ackReplicatedTimeoutMs: config.ackReplicatedTimeoutMs,
    });
    registerIngestRoute(app, ingest);
    const search = new AuditSearch(store, tiering);
    registerSearchRoute(app, { search, viewerMaxPage: config.viewerMaxPage, membership: dynamicMembership });
    registerStatsRoute(app, { search, viewerMaxPage: config.viewerMaxPage, membership: dynamicMembership });
    registerSettingsRoutes(app, settings, dynamicMembership, tiering);
    registerMaintenanceRoutes(app, dynamicMembership, tiering);
    registerClusterRoute(app, dynamicMembership);
    registerHealthRoutes(app, metrics, () => (membership.isLeader() ? 'leader' : 'standby'));
    // Last: page-only routes are added only where no API route owns the path.
    registerAdminUiRoutes(app, adminUi);

    if (options.coordinatorUrl !== undefined) {
      const clusterRef: { node?: ClusterNode } = {};
      const transport = httpPeerTransport(() => {
        if (!clusterRef.node) throw new Error('cluster not started');
        return clusterRef.node.clusterToken();
      });
      // Closed after the cluster node (closers run in reverse), which stops using it first.
      closers.push(async () => transport.close());
      // Routes must exist before listen; the cluster starts once the URL is known.
      registerInternalRoutes(app, {
        clusterToken: () => clusterRef.node?.clusterToken() ?? Promise.reject(new Error('cluster not started')),
        pull: (request) => (clusterRef.node ? clusterRef.node.pull(request) : Promise.reject(new Error('cluster not started'))),
        receiveForward: (request) => (clusterRef.node ? clusterRef.node.receiveForward(request) : Promise.reject(new Error('cluster not started'))),
      });
      await listen(app, options);
      url = advertisedUrl(app, options);
      const log = app.log.child({ component: 'cluster', nodeId });
      const cluster = await ClusterNode.start({
        store,
        coordinatorUrl: options.coordinatorUrl,
        clusterName: config.clusterName,
        nodeId,
        url,
        leaseTtlMs: config.leaseTtlMs,
        transport,
        forwardMaxAttempts: config.forwardMaxAttempts,
        forwardQueueCapacity: config.forwardQueueCapacity,
        log: { info: (obj, msg) => log.info(obj, msg), warn: (obj, msg) => log.warn(obj, msg) },
        hooks: {
          onMetaApplied: () => void settings.reload().catch((err: unknown) => log.warn({ err }, 'could not reload replicated settings')),
          onForwarded: (n) => metrics.eventsForwarded.inc(n),
          onForwardAttemptsExhausted: () => metrics.forwardAttemptsExhausted.inc(),
          onOutboxOverCapacity: () => metrics.outboxOverCapacity.inc(),
          onDiverted: (n) => metrics.eventsDiverted.inc(n),
        },
      });
      clusterRef.node = cluster;
      const started = cluster;
      sequencer = () => started.sequencer();
      membership = clusterMembership(started);
      // Closed first (reverse order): peers' long polls end, so the HTTP server can close at once.
      closers.push(() => started.close());
    } else {
      await listen(app, options);
      url = advertisedUrl(app, options);
    }
    pruner.start();
    pruner.trigger().catch(() => undefined);
    tiering.sweeper.start();
    await tiering.maintenance.refresh();

    let closed: Promise<void> | undefined;
    const close = () => (closed ??= closeAll());
    return { url, nodeId, adminToken, store, settings, metrics, membership, tiering, embeddedS3, app, close, [Symbol.asyncDispose]: close };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

async function listen(app: FastifyInstance, options: AuditNodeOptions): Promise<void> {
  await app.listen({ host: options.host, port: options.port });
}

function advertisedUrl(app: FastifyInstance, options: AuditNodeOptions): string {
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return options.advertiseUrl ?? `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
}

/** A Membership that follows whichever one is current (single node until the cluster starts). */
function membershipProxy(current: () => Membership): Membership {
  return {
    get coordinated() {
      return current().coordinated;
    },
    isLeader: () => current().isLeader(),
    term: () => current().term(),
    leaderUrl: () => current().leaderUrl(),
    status: () => current().status(),
    waitForReplication: (seq, timeoutMs) => current().waitForReplication(seq, timeoutMs),
    outboxChanged: () => current().outboxChanged(),
  };
}
