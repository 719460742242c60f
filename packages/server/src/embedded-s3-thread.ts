/**
 * The embedded S3 endpoint's worker thread (see startEmbeddedS3): it listens and serves there,
 * so the endpoint's request handling, signature checks and file I/O do not run on the node's
 * event loop. Told `close`, it stops listening and answers `closed`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { startS3Endpoint } from '@auditlake/s3-endpoint';
import { errorData, type EmbeddedS3ThreadData, type EmbeddedS3ThreadMessage, type EmbeddedS3ThreadRequest } from './embedded-s3-thread-protocol.js';
import { limitConnections } from './connection-limits.js';
import { HostNames } from './host-names.js';

const port = parentPort;
if (port === null) throw new Error('embedded-s3-thread must run in a worker thread');
const data = workerData as EmbeddedS3ThreadData;
const post = (message: EmbeddedS3ThreadMessage) => port.postMessage(message);

// The node's Host rule for unsigned reads, rebuilt here from its names (a function cannot cross threads).
const hosts = data.publicReadHosts === undefined ? undefined : new HostNames(data.publicReadHosts.configured, data.publicReadHosts.own);
try {
  const endpoint = await startS3Endpoint({
    directory: data.directory,
    host: data.host,
    port: data.port,
    buckets: data.buckets,
    credentials: data.credentials,
    publicRead: data.publicRead,
    ...(hosts === undefined ? {} : { publicReadHost: (host: string | undefined) => hosts.allows(host) }),
    onInternalError: (err) => post({ type: 'internal-error', error: errorData(err) }),
    // The thread shares the node's file descriptors: idle connections held open here took every
    // one of them, and the node's API and LevelDB with them (review).
    configureServer: (server) => limitConnections(server, data.connectionLimits),
  });
  port.on('message', (request: EmbeddedS3ThreadRequest) => {
    if (request.type === 'close') void endpoint.close().then(() => post({ type: 'closed' }));
  });
  post({ type: 'listening', port: endpoint.port });
} catch (err) {
  post({ type: 'start-failed', error: errorData(err) });
}
