import { join } from 'node:path';
import type { S3ConnectionConfig } from '@auditlake/model';
import { startS3Endpoint, type S3Credentials, type S3Endpoint } from '@auditlake/s3-endpoint';
import { loadOrCreateEmbeddedS3Credentials, type EmbeddedS3Credentials } from './embedded-s3-credentials.js';

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
  /** The Host names unsigned reads are answered under (the node's HostNames rule). */
  publicReadHost?: (host: string | undefined) => boolean;
  onInternalError: (err: unknown) => void;
}

export interface EmbeddedS3 extends AsyncDisposable {
  readonly endpoint: S3Endpoint;
  /** The URL this node's own connection `local` uses (loopback when listening on every address). */
  readonly connectionUrl: string;
  readonly credentials: EmbeddedS3Credentials;
  readonly publicRead: boolean;
  close(): Promise<void>;
}

/** A wildcard listen address is not one to connect to; the node reaches itself over loopback. */
function connectHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * The node's embedded S3 endpoint (`--embedded-s3`): bucket `auditlake` under
 * `<dataDir>/s3`, on the node's host, requiring SigV4 signatures with the node's own key pair.
 */
export async function startEmbeddedS3(options: EmbeddedS3Options): Promise<EmbeddedS3> {
  const credentials: EmbeddedS3Credentials = options.credentials ? { ...options.credentials, origin: 'given' } : await loadOrCreateEmbeddedS3Credentials(options.dataDir);
  const endpoint = await startS3Endpoint({
    directory: join(options.dataDir, 's3'),
    host: options.host,
    port: options.port,
    buckets: [EMBEDDED_BUCKET],
    credentials,
    publicRead: options.publicRead,
    ...(options.publicReadHost ? { publicReadHost: options.publicReadHost } : {}),
    onInternalError: options.onInternalError,
  });
  const close = () => endpoint.close();
  return { endpoint, connectionUrl: `http://${connectHost(options.host)}:${endpoint.port}`, credentials, publicRead: options.publicRead, close, [Symbol.asyncDispose]: close };
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
