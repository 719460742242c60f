import { resolve } from 'node:path';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { EMBEDDED_S3_ACCESS_KEY_ENV, EMBEDDED_S3_SECRET_KEY_ENV, startAuditNode, type AuditNode, type EmbeddedS3 } from '@auditlake/server';
import pretty from 'pino-pretty';
import { addressInUseMessage } from './address-in-use.js';
import { parseStartOptions } from './start-options.js';
import { shownRedisUrl } from './redis-url.js';

/** SIGTERM/SIGINT must finish within this; past it the process exits non-zero. */
const SHUTDOWN_MS_MAX = 10_000;

function embeddedS3Lines(embedded: EmbeddedS3): string[] {
  const access = embedded.publicRead ? 'SigV4-signed requests; unsigned GET/HEAD of objects too' : 'SigV4-signed requests only';
  const lines = [`embedded S3 endpoint: ${embedded.endpoint.url} (bucket auditlake; S3 connection 'local', Iceberg catalog 'local'; ${access})`];
  const { credentials } = embedded;
  if (credentials.origin === 'generated') {
    lines.push(`embedded S3 credentials (generated now, kept in ${credentials.path ?? ''}; shown only this once): access key ${credentials.accessKeyId} secret key ${credentials.secretAccessKey}`);
  } else if (credentials.origin === 'data-dir') {
    lines.push(`embedded S3 credentials: kept in ${credentials.path ?? ''}`);
  } else {
    lines.push(`embedded S3 credentials: access key ${credentials.accessKeyId} (given by ${EMBEDDED_S3_ACCESS_KEY_ENV} or the configuration)`);
  }
  return lines;
}

/** `auditlake start`: runs a node until SIGTERM or SIGINT, then closes it and exits 0. */
export async function startCommand(args: string[], env: NodeJS.ProcessEnv): Promise<AuditNode> {
  const options = parseStartOptions(args, env);
  const nodeOptions: Parameters<typeof startAuditNode>[0] = {
    dataDir: options.dataDir,
    host: options.host,
    port: options.port,
    config: options.config,
    // Readable lines for a person at a terminal; JSON lines for a log collector.
    logger: process.stdout.isTTY ? { level: options.logLevel, stream: pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }) } : { level: options.logLevel },
  };
  if (options.nodeId !== undefined) nodeOptions.nodeId = options.nodeId;
  if (options.advertiseUrl !== undefined) nodeOptions.advertiseUrl = options.advertiseUrl;
  if (options.coordinatorUrl !== undefined) nodeOptions.coordinatorUrl = options.coordinatorUrl;
  if (options.embeddedS3Port !== undefined) nodeOptions.embeddedS3Port = options.embeddedS3Port;
  if (options.embeddedS3PublicRead) nodeOptions.embeddedS3PublicRead = true;
  const s3AccessKey = env[EMBEDDED_S3_ACCESS_KEY_ENV];
  const s3SecretKey = env[EMBEDDED_S3_SECRET_KEY_ENV];
  if (Boolean(s3AccessKey) !== Boolean(s3SecretKey)) throw new AuditError(AuditErrorCode.CONFIG_INVALID, `${EMBEDDED_S3_ACCESS_KEY_ENV} and ${EMBEDDED_S3_SECRET_KEY_ENV} are set together or not at all`);
  if (s3AccessKey && s3SecretKey) nodeOptions.embeddedS3Credentials = { accessKeyId: s3AccessKey, secretAccessKey: s3SecretKey };
  // Fail-stop: a store that failed a write takes no other until it is reopened, so the process
  // ends (exit 1) rather than stay up refusing events — a cluster's lease then passes to a
  // standby, and a supervisor restarts the node, which recovers its log up to the failed write.
  const storeFault: { stop?: () => void } = {};
  nodeOptions.onStoreWriteFault = () => storeFault.stop?.();
  const nodeIdInUse: { stop?: (err: Error) => void; early?: Error } = {};
  nodeOptions.onNodeIdInUse = (err) => (nodeIdInUse.stop ? nodeIdInUse.stop(err) : (nodeIdInUse.early = err));
  // A file-size limit (ulimit -f) then fails the write (EFBIG) like a full disk, and the node
  // says why it stops, instead of the process dying of the signal mid-write without a word.
  process.on('SIGXFSZ', () => undefined);
  if (env['AUDITLAKE_ADMIN_TOKEN']) nodeOptions.adminToken = env['AUDITLAKE_ADMIN_TOKEN'];
  if (env['AUDITLAKE_INGEST_TOKEN']) nodeOptions.ingestToken = env['AUDITLAKE_INGEST_TOKEN'];
  let node: AuditNode;
  try {
    node = await startAuditNode(nodeOptions);
  } catch (err) {
    // A port another process holds: one line naming it and the option that chose it.
    const inUse = addressInUseMessage(err, { http: options.port, ...(options.embeddedS3Port !== undefined ? { embeddedS3: options.embeddedS3Port } : {}) });
    if (inUse !== undefined) throw new AuditError(AuditErrorCode.CONFIG_INVALID, inUse, { cause: err });
    throw err;
  }

  const cluster = options.coordinatorUrl === undefined ? 'single node' : `cluster via ${shownRedisUrl(options.coordinatorUrl)}`;
  const lines = [`auditlake node ${node.nodeId} listening on ${node.url} (${cluster}; data in ${resolve(options.dataDir)})`, `admin UI: ${node.url}/admin/audit`];
  if (node.embeddedS3) lines.push(...embeddedS3Lines(node.embeddedS3));
  if (node.adminToken?.generated) {
    lines.push(`admin token (generated now, kept in ${node.adminToken.path}; shown only this once): ${node.adminToken.token}`);
  } else if (node.adminToken) {
    lines.push(`admin token: kept in ${node.adminToken.path}`);
  }
  process.stdout.write(lines.join('\n') + '\n');

  let stopping = false;
  const stop = (signal: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    node.app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      process.stderr.write(`auditlake: shutdown took longer than ${SHUTDOWN_MS_MAX} ms; exiting\n`);
      process.exit(1);
    }, SHUTDOWN_MS_MAX);
    force.unref();
    node.close().then(
      () => process.exit(exitCode),
      (err: unknown) => {
        process.stderr.write(`auditlake: error while shutting down: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  storeFault.stop = () => {
    process.stderr.write(`auditlake: the local store failed a write; stopping (restart the node once the disk is fixed): ${node.store.writeFault?.message ?? ''}\n`);
    stop('store write failed', 1);
  };
  // A fault during the start, before the line above: stop now.
  if (node.store.writeFault !== undefined) storeFault.stop();
  nodeIdInUse.stop = (err) => {
    process.stderr.write(`auditlake: ${err.message}; stopping\n`);
    stop('node id in use', 2);
  };
  if (nodeIdInUse.early !== undefined) nodeIdInUse.stop(nodeIdInUse.early);
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  return node;
}
