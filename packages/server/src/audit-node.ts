import { join } from 'node:path';
import { ClusterNode, ClusterToken, nodeIdInUse, RedisCoordinator, systemClock } from '@auditlake/cluster';
import { AuditError, AuditErrorCode, describeChanges, isAuditError, encodeEvent, type CredentialConfig, type NodeConfig, type TierMode } from '@auditlake/model';
import { loadOrCreateNodeKey } from '@auditlake/integrity';
import { AuditStore, LOG_TAIL_BYTES, RetentionPruner, writeFaultRefusal, type EventIdConflict } from '@auditlake/store';
import { S3Connections } from '@auditlake/lake';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { Authenticator } from './auth/authenticator.js';
import { DenyRecorder } from './auth/deny-recorder.js';
import { createHttpApp } from './http-app.js';
import { prepareDataDir } from './data-dir.js';
import { httpPeerTransport, type ClosablePeerTransport } from './http-peer-transport.js';
import { CLUSTER_SECRET_CHARS_MIN } from './peer-auth.js';
import { IngestParsePool } from './ingest-parse-pool.js';
import { IngestService } from './ingest-service.js';
import { ConflictRecorder } from './conflict-recorder.js';
import { clusterMembership, singleNodeMembership, type Membership } from './membership.js';
import { NodeMetrics } from './metrics.js';
import { registerNodeGauges } from './node-gauges.js';
import { createNodeLogger, type NodeLoggerOptions } from './node-logger.js';
import { loadNodeId, loadOrCreateAdminToken, type AdminToken } from './node-identity.js';
import { registerClusterRoute } from './routes/cluster-route.js';
import { limitConnections } from './connection-limits.js';
import { weakSecretWarnings } from './auth/weak-secrets.js';
import { registerHealthRoutes } from './routes/health-routes.js';
import { HostNames } from './host-names.js';
import { registerAdminUiRoutes } from './routes/admin-ui-routes.js';
import { loadAdminUiFiles } from './admin-ui/admin-ui-files.js';
import { registerIngestRoute } from './routes/ingest-route.js';
import { registerInternalRoutes } from './routes/internal-routes.js';
import { registerSearchRoute } from './routes/search-route.js';
import { registerStatsRoute } from './routes/stats-route.js';
import { registerIntegrityRoutes } from './routes/integrity-route.js';
import { registerLedgerGauges, registerLedgerRoute } from './routes/ledger-route.js';
import { IntegrityService } from './integrity-service.js';
import { AuditSearch } from './audit-search.js';
import { registerSettingsRoutes } from './routes/settings-route.js';
import { SettingsService } from './settings-service.js';
import { TieringService, tierTargetValidator } from './tiering-service.js';
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
  logger?: NodeLoggerOptions;
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
  /**
   * Told once when the local store fails a write: it takes no other until the node restarts
   * (latchWriteFaults; `/health` answers 503 from then on). `auditlake start` stops the process,
   * so a cluster's lease passes to a standby and a supervisor restarts it.
   */
  onStoreWriteFault?: (fault: Error) => void;
  /**
   * Called once when another running process turns out to hold this node's `--node-id`
   * (AUDIT_NODE_ID_IN_USE after the start): the node must stop taking part; `auditlake start`
   * stops it, exit 2.
   */
  onNodeIdInUse?: (err: Error) => void;
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
  /** The record chain's leader duties (key registration, checkpoints) and its listing. */
  readonly integrity: IntegrityService;
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
  // Made first: the embedded endpoint, started before everything else, logs with it too.
  const logger = createNodeLogger(options.logger);
  await prepareDataDir(options.dataDir, (message) => logger.warn({ dataDir: options.dataDir }, message));
  const credentials = embeddedS3Credentials(options);
  const hostLists = hostNameLists(options);
  const hosts = new HostNames(hostLists.configured, hostLists.own);
  const embeddedS3 =
    options.embeddedS3Port === undefined
      ? undefined
      : await startEmbeddedS3({
          dataDir: options.dataDir,
          host: options.host,
          port: options.embeddedS3Port,
          ...(credentials ? { credentials } : {}),
          publicRead: options.embeddedS3PublicRead ?? false,
          publicReadHosts: hostLists,
          connectionLimits: { max: options.config.httpConnectionsMax, perClientMax: options.config.httpConnectionsPerClientMax },
          onInternalError: (err) => logger.error({ err }, 'the embedded S3 endpoint failed a request'),
          onThreadProblem: (err) => logger.error({ err }, `the embedded S3 endpoint's thread: ${err.message}`),
        });
  try {
    return await startWith(options, embeddedS3, logger, hosts);
  } catch (err) {
    await embeddedS3?.close();
    throw err;
  }
}

async function startWith(options: AuditNodeOptions, embeddedS3: EmbeddedS3 | undefined, logger: Logger, hosts: HostNames): Promise<AuditNode> {
  const config = embeddedS3 ? withEmbeddedS3(options.config, embeddedS3) : options.config;
  const nodeId = options.nodeId ?? (await loadNodeId(options.dataDir));
  const { tokens, adminToken } = await credentials(options);
  for (const warning of weakSecretWarnings(tokens, config.accessKeys, config.jwtSecret)) logger.warn(warning);
  // Refused, not warned of: it is what stands between a reader of the coordinator and the log. Never repeated.
  if (config.clusterSecret !== '' && config.clusterSecret.length < CLUSTER_SECRET_CHARS_MIN) {
    throw new AuditError(AuditErrorCode.CONFIG_INVALID, `auditlake.cluster.secret is ${config.clusterSecret.length} characters; at least ${CLUSTER_SECRET_CHARS_MIN} are required (e.g. openssl rand -base64 32), the same on every node`);
  }
  const coordinatorUrl = options.coordinatorUrl;
  const store = await AuditStore.open({
    location: join(options.dataDir, 'store'),
    now: () => Date.now() + config.debugClockOffsetMs,
    // A single node orders everything itself (term 0). A cluster node orders only as the
    // cluster's leader, and every append there passes the leader's sequencer.
    sequencer: coordinatorUrl === undefined ? () => 0 : orderedOnlyByTheLeader,
    // A cluster node's standbys pull its log when it leads, and its sweep (or a single node's)
    // reads the newest entries from the tail while it keeps up. A single node keeps one only
    // while it tiers (keepLogTail, below).
    logTailBytes: coordinatorUrl === undefined ? 0 : LOG_TAIL_BYTES,
    chain: config.integrityChainEnabled,
    cacheBytes: config.storeCacheBytes,
    prunedIdsKeepMs: config.resendIdsKeepDays * 24 * 60 * 60 * 1000,
    onWriteFault: (fault) => {
      logger.error({ err: fault.message }, writeFaultRefusal(fault).message);
      options.onStoreWriteFault?.(fault);
    },
  });
  // Closed in reverse order of opening.
  const closers: Array<() => Promise<void>> = [...(embeddedS3 ? [() => embeddedS3.close()] : []), () => store.close()];
  const closeAll = async () => {
    for (const close of closers.reverse().splice(0)) await close();
  };
  try {
    const metrics = new NodeMetrics(
      () => store.sizeOnDiskBytes(),
      () => store.outboxCount,
      () => store.leveldbMemoryBytes(),
    );
    // Built before the HTTP app, so routes are registered with plain objects; it joins the
    // cluster (start) once the app listens and its URL is known.
    // The recorder is made once membership is known (below); the cluster node calls it only after it started.
    const forwarded: { conflicts?: ConflictRecorder } = {};
    const recordForwardConflicts = (refused: readonly EventIdConflict[], receivedBy: string) => forwarded.conflicts?.record(refused, { receivedBy }) ?? Promise.resolve();
    const cluster = coordinatorUrl === undefined ? undefined : await openClusterNode(coordinatorUrl, nodeId, config, store, metrics, logger, closers, recordForwardConflicts, options.onNodeIdInUse);
    // A single node's status shows its address, known once the app below listens.
    const membership = cluster ? clusterMembership(cluster.node, (url) => cluster.transport.proven(url)) : singleNodeMembership(nodeId, () => advertisedUrl(app, options), store);
    const conflicts = new ConflictRecorder({ membership, metrics, log: logger });
    forwarded.conflicts = conflicts;
    const connections = new S3Connections(config.s3Connections);
    const settings = await SettingsService.load(store, config, tierTargetValidator(connections, config, store), membership.sequencer);
    cluster?.node.onMetaApplied(() => void settings.reload().catch((err: unknown) => logger.warn({ err }, 'could not reload replicated settings')));
    const tiering = new TieringService({ store, config, connections, settings, membership, metrics, log: logger });
    closers.push(() => tiering.close());
    // An event re-sent after retention deleted its tiered copy here is found in the tier.
    store.setTieredCopyLookup((eventTimes, sender) => tiering.tieredCopies(eventTimes, sender));
    closers.push(async () => store.setTieredCopyLookup(undefined));
    const pruner = new RetentionPruner(store, {
      intervalMs: config.retentionIntervalMs,
      batchSize: config.pruneBatchSize,
      policy: (nowMs) => tiering.prunePolicy(nowMs),
      now: () => Date.now() + config.debugClockOffsetMs,
      onClockAhead: (wallMs, steadyMs) =>
        logger.warn(
          { wallMs, steadyMs },
          `Retention: the wall clock (${new Date(wallMs).toISOString()}) is ${Math.round((wallMs - steadyMs) / 1000)} s ahead of the time this node has counted since it started (${new Date(steadyMs).toISOString()}): stepped forward, or the machine was suspended. Retention deletes by the earlier time; it takes the wall clock as it reads at the next restart`,
        ),
      onPruned: (result) => {
        metrics.eventsPruned.inc(result.deleted);
        metrics.pruneRuns.inc(result.batches);
      },
    });
    closers.push(() => pruner.close());
    // Nothing but the sweep reads a single node's tail: kept only while it tiers.
    const keepLogTail = (mode: TierMode) => {
      if (coordinatorUrl === undefined) store.setLogTailBytes(mode === 'none' ? 0 : LOG_TAIL_BYTES);
    };
    keepLogTail(settings.effective.tierMode);
    settings.onChange((effective, changes) => {
      keepLogTail(effective.tierMode);
      logger.info({ changes }, `Settings changed: ${describeChanges(changes)}`);
      if (changes.some((c) => c.key === 'audit.retention.days' || c.key.startsWith('audit.tier.'))) pruner.trigger().catch(() => undefined);
      // Every save refreshes the maintenance registrations (a renamed target is registered).
      tiering.maintenance.refresh().catch((err: unknown) => logger.warn({ err: String(err) }, 'refreshing table maintenance failed'));
    });
    const parser = new IngestParsePool(config.ingestParseThreads);
    closers.push(() => parser.close());
    const adminUi = loadAdminUiFiles();
    const denyRecorder = new DenyRecorder({
      perSecond: config.denyAuditPerSecond,
      perClientMax: config.refusalsPerClientMax,
      perClientWindowMs: config.refusalsWindowMs,
      record: async (event, freshId) => {
        await membership.receive([encodeEvent(event)], new Set([freshId]));
      },
      onSuppressed: () => metrics.accessDeniedUnrecorded.inc(),
      onError: (err) => logger.warn({ err }, 'could not record refused access'),
    });
    // Closed after the HTTP server and before the store: it records the summaries of open windows.
    closers.push(() => denyRecorder.close());
    const app = createHttpApp({
      adminUi,
      bodyLimitBytes: config.bodyLimitBytes,
      bodyInflightMaxBytes: config.bodyInflightMaxBytes,
      bodyInflightPerClientMaxBytes: config.bodyInflightPerClientMaxBytes,
      bodyTimeoutMs: config.bodyTimeoutMs,
      authenticator: new Authenticator({ tokens, accessKeys: config.accessKeys, jwtSecret: config.jwtSecret, jwtIssuer: config.jwtIssuer, jwtAudience: config.jwtAudience }),
      denyRecorder,
      metrics,
      logger,
    });
    registerNodeGauges(metrics.registry, { tierStatus: () => tiering.status(), membership, prunedIds: () => store.prunedIdsFigures });
    registerLedgerGauges(metrics.registry, store);
    // Closed before the parser, tiering and the store: it first lets running requests finish.
    closers.push(() => app.close());
    const ingest = new IngestService({
      store,
      parser,
      settings,
      metrics,
      membership,
      conflicts,
      nodeId,
      log: logger,
      random: options.random ?? Math.random,
      ackReplicatedTimeoutMs: config.ackReplicatedTimeoutMs,
      sourceBindings: config.sourceBindings,
      now: () => Date.now() + config.debugClockOffsetMs,
    });
    registerIngestRoute(app, ingest);
    const search = new AuditSearch(store, tiering);
    registerSearchRoute(app, { search, viewerMaxPage: config.viewerMaxPage, membership, searchTimeoutMs: config.searchTimeoutMs });
    registerStatsRoute(app, { search, viewerMaxPage: config.viewerMaxPage, membership, searchTimeoutMs: config.searchTimeoutMs });
    registerSettingsRoutes(app, settings, membership, tiering, config.ackReplicatedTimeoutMs);
    registerMaintenanceRoutes(app, membership, tiering);
    const integrity = new IntegrityService({
      store,
      membership: membership,
      nodeId,
      key: await loadOrCreateNodeKey(options.dataDir),
      now: () => Date.now() + config.debugClockOffsetMs,
      checkpointEvents: config.integrityCheckpointEvents,
      checkpointIntervalMs: config.integrityCheckpointIntervalMs,
      log: logger,
    });
    // Closed before the store (closers run in reverse): its last tick finishes first.
    closers.push(() => integrity.close());
    registerIntegrityRoutes(app, { integrity, store, membership, now: () => Date.now() + config.debugClockOffsetMs, findTiered: (eventIds) => tiering.findTieredRecords(eventIds), ackReplicatedTimeoutMs: config.ackReplicatedTimeoutMs });
    registerLedgerRoute(app, { store, countTiered: async () => void (await tiering.countTiered()) });
    registerClusterRoute(app, membership);
    registerHealthRoutes(app, metrics, { role: () => (membership.isLeader() ? 'leader' : 'standby'), storeFault: () => store.writeFault }, hosts);
    if (cluster) {
      registerInternalRoutes(app, {
        clusterToken: () => cluster.token.current(),
        pull: (request) => cluster.node.pull(request),
        receiveForward: (request) => cluster.node.receiveForward(request),
        ...(config.clusterSecret === '' ? {} : { secret: config.clusterSecret }),
        ownUrl: () => advertisedUrl(app, options),
      });
    }
    // Last: page-only routes are added only where no API route owns the path.
    registerAdminUiRoutes(app, adminUi);

    // Connections past the caps are closed as they arrive, or take the place of one that sends no request.
    limitConnections(app.server, { max: config.httpConnectionsMax, perClientMax: config.httpConnectionsPerClientMax });
    await app.listen({ host: options.host, port: options.port });
    const url = advertisedUrl(app, options);
    if (cluster) {
      cluster.node.start(url);
      // Closed first: peers' long polls end, so the HTTP server can close at once.
      closers.push(() => cluster.node.close());
    }
    pruner.start();
    pruner.trigger().catch(() => undefined);
    tiering.sweeper.start();
    // A failed refresh (a stored cron that never runs, from an older version) must not keep
    // the node from starting: maintenance stays unregistered, and the log says why, until the
    // settings are saved again.
    await tiering.maintenance.refresh().catch((err: unknown) => logger.warn({ err: String(err) }, `table maintenance is not registered: ${err instanceof Error ? err.message : String(err)}`));
    integrity.start();

    let closed: Promise<void> | undefined;
    const close = () => (closed ??= closeAll());
    return { url, nodeId, adminToken, store, settings, metrics, membership, tiering, integrity, embeddedS3, app, close, [Symbol.asyncDispose]: close };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/** A cluster node's store refuses to order anything not passed the leader's sequencer. */
const orderedOnlyByTheLeader = (): number => {
  throw new AuditError(AuditErrorCode.NOT_LEADER, 'a cluster node orders events only as the leader', { retryable: true });
};

/**
 * The cluster node on its production ports: the Redis coordinator, HTTP to peers with the
 * cluster token, the system clock. Registers their closers (the coordinator after the node).
 */
async function openClusterNode(
  coordinatorUrl: string,
  nodeId: string,
  config: NodeConfig,
  store: AuditStore,
  metrics: NodeMetrics,
  logger: Logger,
  closers: Array<() => Promise<void>>,
  onConflicts: (conflicts: readonly EventIdConflict[], receivedBy: string) => Promise<void>,
  onNodeIdInUse: ((err: Error) => void) | undefined,
): Promise<{ node: ClusterNode; token: ClusterToken; transport: ClosablePeerTransport }> {
  const coordinator = new RedisCoordinator({ url: coordinatorUrl, clusterName: config.clusterName, nodeId, leaseTtlMs: config.leaseTtlMs });
  closers.push(() => coordinator.close());
  const token = await ClusterToken.load(store, coordinator);
  // A data dir of another cluster is refused at start, in words, rather than found out by the
  // elector's first round; an unreachable coordinator is left to the rounds that follow.
  const connected = await coordinator.connected(config.leaseTtlMs);
  if (connected) {
    await token.refresh().catch((err: unknown) => {
      if (isAuditError(err, AuditErrorCode.CLUSTER_MISMATCH)) throw err;
    });
  }
  const transport = httpPeerTransport(() => token.current(), config.clusterSecret === '' ? undefined : config.clusterSecret);
  closers.push(async () => transport.close());
  const log = logger.child({ component: 'cluster', nodeId });
  if (config.clusterSecret === '') {
    log.warn('no cluster secret (auditlake.cluster.secret): the cluster token, which whoever reads the coordinator holds, opens this node\'s internal endpoints (pull the log, forward events); set the same secret of 32 or more characters on every node');
  } else {
    log.info('peer requests are signed with the cluster secret, and only answers that prove it are used');
  }
  const node = await ClusterNode.open({
    store,
    coordinator,
    transport,
    clock: systemClock,
    clusterToken: token,
    nodeId,
    leaseTtlMs: config.leaseTtlMs,
    forwardMaxAttempts: config.forwardMaxAttempts,
    forwardQueueCapacity: config.forwardQueueCapacity,
    log,
    hooks: {
      onForwarded: (n) => metrics.eventsForwarded.inc(n),
      onForwardAttemptsExhausted: () => metrics.forwardAttemptsExhausted.inc(),
      onOutboxOverCapacity: () => metrics.outboxOverCapacity.inc(),
      onDiverted: (n) => metrics.eventsDiverted.inc(n),
      onDivergenceFound: () => metrics.divergencesFound.inc(),
      onConflicts,
      ...(onNodeIdInUse ? { onNodeIdInUse } : {}),
    },
  });
  // A second process given this node's --node-id (another data dir) is refused before it takes
  // part; one that starts in the same instant is stopped by the coordinator's publish rule.
  const twin = connected ? await node.liveTwin().catch(() => undefined) : undefined;
  if (twin !== undefined) throw nodeIdInUse(nodeId, twin);
  return { node, token, transport };
}

/**
 * The Host names the open endpoints (and the embedded endpoint's unsigned reads) answer under,
 * as HostNames' arguments (the embedded endpoint's thread builds its own from them): the
 * configured ones, and the names this node is reached by without configuration, its `--host`
 * and its advertised URL's host.
 */
function hostNameLists(options: AuditNodeOptions): { configured: string[]; own: string[] } {
  const own = [options.host];
  if (options.advertiseUrl !== undefined && URL.canParse(options.advertiseUrl)) own.push(new URL(options.advertiseUrl).hostname);
  return { configured: [...options.config.allowedHosts], own };
}

function advertisedUrl(app: FastifyInstance, options: AuditNodeOptions): string {
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return options.advertiseUrl ?? `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
}
