import { join } from 'node:path';
import type { CredentialConfig, NodeConfig } from '@auditlake/model';
import { AuditStore, RetentionPruner } from '@auditlake/store';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { Authenticator } from './auth/authenticator.js';
import { DenyRecorder } from './auth/deny-recorder.js';
import { createHttpApp } from './http-app.js';
import { IngestService } from './ingest-service.js';
import { NodeMetrics } from './metrics.js';
import { loadNodeId, loadOrCreateAdminToken, type AdminToken } from './node-identity.js';
import { registerClusterRoute } from './routes/cluster-route.js';
import { registerHealthRoutes } from './routes/health-routes.js';
import { registerIngestRoute } from './routes/ingest-route.js';
import { registerSearchRoute } from './routes/search-route.js';
import { registerSettingsRoutes } from './routes/settings-route.js';
import { SettingsService } from './settings-service.js';

export interface AuditNodeOptions {
  dataDir: string;
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  config: NodeConfig;
  nodeId?: string;
  /** URL peers use to reach this node; default `http://<host>:<port>`. */
  advertiseUrl?: string;
  /** `AUDITLAKE_ADMIN_TOKEN`: the built-in `admin` principal's token. */
  adminToken?: string;
  /** `AUDITLAKE_INGEST_TOKEN`: the built-in `ingest` principal's token. */
  ingestToken?: string;
  /** pino options or `false`; default false (tests), the CLI turns it on. */
  logger?: NonNullable<FastifyServerOptions['logger']>;
  /** Random source for read sampling; injected so a test can replay a run. */
  random?: () => number;
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

/** The composition root: opens the store and every service on it, then listens. */
export async function startAuditNode(options: AuditNodeOptions): Promise<AuditNode> {
  const { config } = options;
  const nodeId = options.nodeId ?? (await loadNodeId(options.dataDir));
  const { tokens, adminToken } = await credentials(options);
  const store = await AuditStore.open({ location: join(options.dataDir, 'store') });
  const closers: Array<() => Promise<void>> = [() => store.close()];
  const closeAll = async () => {
    for (const close of closers.reverse().splice(0)) await close();
  };
  try {
    const metrics = new NodeMetrics(() => store.sizeOnDiskBytes());
    const settings = await SettingsService.load(store, config);
    const pruner = new RetentionPruner(store, {
      intervalMs: config.retentionIntervalMs,
      batchSize: config.pruneBatchSize,
      retentionDays: () => settings.effective.retentionDays,
      onPruned: (result) => {
        metrics.eventsPruned.inc(result.deleted);
        metrics.pruneRuns.inc(result.batches);
      },
    });
    closers.push(() => pruner.close());
    settings.onChange((_effective, changes) => {
      if (changes.some((c) => c.key === 'audit.retention.days')) pruner.trigger().catch(() => undefined);
    });

    const app = createHttpApp({
      bodyLimitBytes: config.bodyLimitBytes,
      authenticator: new Authenticator({ tokens, accessKeys: config.accessKeys, jwtSecret: config.jwtSecret }),
      denyRecorder: new DenyRecorder({
        perSecond: config.denyAuditPerSecond,
        record: async (event, freshId) => {
          await store.append([event], { freshIds: new Set([freshId]) });
        },
        onSuppressed: () => metrics.accessDeniedUnrecorded.inc(),
        onError: (err) => app.log.warn({ err }, 'could not record refused access'),
      }),
      metrics,
      logger: options.logger ?? false,
    });
    closers.push(() => app.close());
    registerIngestRoute(app, new IngestService(store, settings, metrics, options.random ?? Math.random));
    registerSearchRoute(app, { store, viewerMaxPage: config.viewerMaxPage });
    registerSettingsRoutes(app, settings);
    registerHealthRoutes(app, metrics, () => 'leader');
    let url = '';
    registerClusterRoute(app, { nodeId, url: () => url, store });

    await app.listen({ host: options.host, port: options.port });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : options.port;
    url = options.advertiseUrl ?? `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
    pruner.start();
    pruner.trigger().catch(() => undefined);

    let closed: Promise<void> | undefined;
    const close = () => (closed ??= closeAll());
    return { url, nodeId, adminToken, store, settings, metrics, app, close, [Symbol.asyncDispose]: close };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
