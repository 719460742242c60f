import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import S3rver from 's3rver';

export const EMBEDDED_BUCKET = 'auditlake';
export const EMBEDDED_CONNECTION_ID = 'local';
/** s3rver's fixed credentials. */
const EMBEDDED_ACCESS_KEY = 'S3RVER';

export interface EmbeddedS3 extends AsyncDisposable {
  endpoint: string;
  port: number;
  close(): Promise<void>;
}

/**
 * An S3-compatible endpoint in this process (s3rver), backed by `<dataDir>/s3`, with bucket
 * `auditlake`, so tiering can be tried — and tested over real S3 HTTP — without a cloud
 * account. Objects can be read with plain unsigned GETs, so independent readers can open them.
 */
export async function startEmbeddedS3(dataDir: string, port: number): Promise<EmbeddedS3> {
  const directory = join(dataDir, 's3');
  await mkdir(directory, { recursive: true });
  // s3rver leaves a failed listen as an unhandled 'error' event (a crash with a stack trace):
  // try the port first, so a taken one is an ordinary EADDRINUSE error the CLI can name.
  if (port !== 0) await assertPortFree(port);
  const server = new S3rver({ address: '127.0.0.1', port, directory, silent: true, configureBuckets: [{ name: EMBEDDED_BUCKET }], vhostBuckets: false });
  const address = await server.run();
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      // SDK clients keep sockets alive; without this, close() waits for them to time out.
      server.httpServer?.closeAllConnections();
      await server.close();
    })());
  return { endpoint: `http://127.0.0.1:${address.port}`, port: address.port, close, [Symbol.asyncDispose]: close };
}

export function embeddedConnection(endpoint: string) {
  return {
    id: EMBEDDED_CONNECTION_ID,
    endpoint,
    region: 'us-east-1',
    accessKeyId: EMBEDDED_ACCESS_KEY,
    secretAccessKey: EMBEDDED_ACCESS_KEY,
    forcePathStyle: true,
  };
}

/** Rejects with the listen error (EADDRINUSE, with its address and port) when `port` cannot be bound. */
function assertPortFree(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
  });
}
