import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { S3ConnectionConfig } from '@auditlake/model';
import { endpointUrl, type S3Credentials, type S3Endpoint } from '@auditlake/s3-endpoint';
import type { ConnectionLimits } from './connection-limits.js';
import { loadOrCreateEmbeddedS3Credentials, type EmbeddedS3Credentials } from './embedded-s3-credentials.js';
import { errorFromData, type EmbeddedS3ThreadData, type EmbeddedS3ThreadMessage, type EmbeddedS3ThreadRequest } from './embedded-s3-thread-protocol.js';
import { RestartingThread, type ThreadRun } from './restarting-thread.js';

export const EMBEDDED_BUCKET = 'auditlake';
export const EMBEDDED_CONNECTION_ID = 'local';
export const EMBEDDED_CATALOG = 'local';

export interface EmbeddedS3Options {
  dataDir: string;
  /** The node's `--host`: the endpoint listens there only. */
  host: string;
  /** 0: any free port. */
  port: number;
  /** Given by env or configuration; else generated into (or read from) the data dir. */
  credentials?: S3Credentials;
  /** `--embedded-s3-public-read`: unsigned GET/HEAD of objects, nothing else. */
  publicRead: boolean;
  /**
   * The Host names unsigned reads are answered under: the node's HostNames rule, given by its
   * arguments (the rule is rebuilt on the endpoint's thread). Absent: under any.
   */
  publicReadHosts?: { configured: string[]; own: string[] };
  /**
   * Connections the endpoint holds at once, all together and per client, as the node's API
   * does (auditlake.http.connections.*): its thread shares the node's file descriptors.
   */
  connectionLimits: ConnectionLimits;
  /** A request the endpoint failed on (its own error, not the client's). */
  onInternalError: (err: unknown) => void;
  /** The endpoint's thread stopped without being asked, or could not be started again (see RestartingThread). */
  onThreadProblem: (err: Error) => void;
  /** How long the thread may take to listen before it is stopped and its start fails (RestartingThread's default: 30 s). */
  threadStartTimeoutMs?: number;
}

export interface EmbeddedS3 extends AsyncDisposable {
  readonly endpoint: S3Endpoint;
  /** The URL this node's own connection `local` uses (loopback when listening on every address). */
  readonly connectionUrl: string;
  readonly credentials: EmbeddedS3Credentials;
  readonly publicRead: boolean;
  close(): Promise<void>;
  /** Test hook: stops the endpoint's thread as an uncaught error there would; it is started again on the same port. */
  crashThreadForTest(): Promise<void>;
}

/** A wildcard listen address is not one to connect to; the node reaches itself over loopback. */
function connectHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** How long close() waits for the endpoint's thread to close its server before stopping the thread. */
const THREAD_CLOSE_WAIT_MS = 10_000;

/**
 * The thread's module. Under the test runner this module runs from `src/*.ts`, which a worker
 * thread cannot load; the built sibling in `dist/` is the same code.
 */
function threadUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../dist/embedded-s3-thread.js', here) : new URL('./embedded-s3-thread.js', here);
}

/**
 * The node's embedded S3 endpoint (`--embedded-s3`): bucket `auditlake` under
 * `<dataDir>/s3`, on the node's host, requiring SigV4 signatures with the node's own key pair.
 * It runs on a worker thread of its own: a sweep's requests to it (data files, manifests,
 * metadata) were served on the node's event loop, beside the ingest and the sweep they came
 * from — about a tenth of that loop's time while a backlog drains. A thread that stops without
 * being asked to is started again on the same port (RestartingThread).
 */
export async function startEmbeddedS3(options: EmbeddedS3Options): Promise<EmbeddedS3> {
  const credentials: EmbeddedS3Credentials = options.credentials ? { ...options.credentials, origin: 'given' } : await loadOrCreateEmbeddedS3Credentials(options.dataDir);
  const data: EmbeddedS3ThreadData = {
    directory: join(options.dataDir, 's3'),
    host: options.host,
    port: options.port,
    buckets: [EMBEDDED_BUCKET],
    credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey },
    publicRead: options.publicRead,
    ...(options.publicReadHosts ? { publicReadHosts: options.publicReadHosts } : {}),
    connectionLimits: options.connectionLimits,
  };
  const thread = await RestartingThread.start(options.port, {
    launch: (port, signal) => launchEndpointThread({ ...data, port }, signal, options.onInternalError, (err) => options.onThreadProblem(new Error(`the thread failed: ${err.message}`, { cause: err }))),
    ...(options.threadStartTimeoutMs === undefined ? {} : { startTimeoutMs: options.threadStartTimeoutMs }),
    onProblem: (err) => options.onThreadProblem(portTaken(err.cause) ? new Error(`${err.message}; until it is back, requests to connection local may be answered by the process that holds the port`, { cause: err.cause }) : err),
  });
  const { port } = thread;
  const close = () => thread.close();
  const endpoint: S3Endpoint = {
    url: endpointUrl(options.host, port),
    host: options.host,
    port,
    credentials: data.credentials,
    buckets: data.buckets,
    close,
    [Symbol.asyncDispose]: close,
  };
  return {
    endpoint,
    connectionUrl: `http://${connectHost(options.host)}:${port}`,
    credentials,
    publicRead: options.publicRead,
    close,
    crashThreadForTest: () => thread.crashForTest(),
    [Symbol.asyncDispose]: close,
  };
}

/** Whether a restart failed because another process listens on the endpoint's port. */
function portTaken(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'EADDRINUSE';
}

/**
 * One run of the endpoint's thread, once it listens; rejected with the thread's start error, or
 * with `signal`'s reason once it aborts before then (the thread is terminated).
 */
async function launchEndpointThread(data: EmbeddedS3ThreadData, signal: AbortSignal, onInternalError: (err: unknown) => void, onThreadError: (err: Error) => void): Promise<ThreadRun> {
  signal.throwIfAborted();
  const worker = new Worker(threadUrl(), { workerData: data });
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  let listening = false;
  let startError: Error | undefined;
  // An uncaught error ends the thread (RestartingThread then starts it again); before it
  // listens (the module failing to load), it is the start's failure.
  worker.on('error', (err) => {
    if (listening) onThreadError(err);
    else startError = err;
  });
  const stop = () => {
    startError ??= signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason));
    void worker.terminate();
  };
  signal.addEventListener('abort', stop, { once: true });
  const port = await new Promise<number>((resolve, reject) => {
    void exited.then((code) => reject(startError ?? new Error(`the embedded S3 endpoint's thread exited (code ${code}) before it listened`)));
    worker.on('message', (message: EmbeddedS3ThreadMessage) => {
      if (message.type === 'listening') {
        // Stopped already (the start timed out or the endpoint is closing): its 'listening' may
        // still arrive before its exit; the start fails with the abort's reason when it exits.
        if (signal.aborted) return;
        listening = true;
        signal.removeEventListener('abort', stop);
        resolve(message.port);
      }
      else if (message.type === 'start-failed') {
        void worker.terminate();
        reject(errorFromData(message.error));
      } else if (message.type === 'internal-error') onInternalError(errorFromData(message.error));
    });
  });
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const closed = new Promise<void>((resolve) => worker.on('message', (message: EmbeddedS3ThreadMessage) => message.type === 'closed' && resolve()));
      const request: EmbeddedS3ThreadRequest = { type: 'close' };
      worker.postMessage(request);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([closed, exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, THREAD_CLOSE_WAIT_MS)))]);
      clearTimeout(timer);
      await worker.terminate();
    })());
  return { port, exited, close, terminate: async () => void (await worker.terminate()) };
}

/** S3 connection `local`: the embedded endpoint, signed with its key pair. */
export function embeddedConnection(embedded: EmbeddedS3): S3ConnectionConfig {
  return {
    id: EMBEDDED_CONNECTION_ID,
    endpoint: embedded.connectionUrl,
    region: 'us-east-1',
    accessKeyId: embedded.credentials.accessKeyId,
    secretAccessKey: embedded.credentials.secretAccessKey,
    forcePathStyle: true,
  };
}
