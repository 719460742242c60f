import type { ForwardRequest, ForwardResponse, PullRequest, PullResponse } from '@auditlake/cluster';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { matchesDigest, digest } from '../auth/constant-time.js';
import { CLUSTER_TOKEN_HEADER } from '../http-peer-transport.js';
import { PEER_WIRE_CONTENT_TYPE, decodeForwardRequest, encodePullResponse } from '../peer-wire.js';

/** What the internal endpoints call (the cluster node, once it has started). */
export interface InternalEndpoints {
  clusterToken(): Promise<string>;
  pull(request: PullRequest): Promise<PullResponse>;
  receiveForward(request: ForwardRequest): Promise<ForwardResponse>;
}

/** Most slices a pull answer is streamed as; one with more is joined and sent as one buffer. */
const PULL_PARTS_STREAMED_MAX = 16;

/** Internal peer endpoints: only nodes holding the cluster token may call them; never audited. */
export function registerInternalRoutes(app: FastifyInstance, cluster: InternalEndpoints): void {
  app.register(async (internal) => {
    internal.addHook('onRequest', async (request, reply) => {
      // Looked up per request: the token can be re-established after Redis restarts empty.
      const expected = digest(await cluster.clusterToken());
      const presented = request.headers[CLUSTER_TOKEN_HEADER];
      if (typeof presented !== 'string' || !matchesDigest(presented, expected)) {
        // Closed with the answer: its body (up to 64 MiB) is never read.
        reply.header('connection', 'close');
        return reply.code(401).send({ status: 'error', error: 'internal endpoint: missing or wrong cluster token', code: 'AUDIT_UNAUTHENTICATED' });
      }
    });
    // Forwarded events arrive as NDJSON, kept as bytes and split into lines before decoding
    // (peer-wire.ts); scoped to these routes.
    internal.addContentTypeParser(PEER_WIRE_CONTENT_TYPE, { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    internal.post('/internal/v1/pull', async (request, reply) => {
      const parts = encodePullResponse(await cluster.pull(request.body as PullRequest));
      // A few slices of the leader's log tail are written as they are: joining a 2,000-entry
      // answer into one buffer was a visible share of a busy leader's CPU. Entries read from
      // LevelDB are a buffer each, and thousands of tiny writes would cost more than the copy.
      return reply.type(PEER_WIRE_CONTENT_TYPE).send(parts.length <= PULL_PARTS_STREAMED_MAX ? Readable.from(parts) : Buffer.concat(parts));
    });
    // Forwarded batches can be larger than one client request.
    internal.post('/internal/v1/forward', { bodyLimit: 64 * 1024 * 1024 }, async (request) => {
      if (!Buffer.isBuffer(request.body)) throw new TypeError(`forward request must be ${PEER_WIRE_CONTENT_TYPE}`);
      return cluster.receiveForward(decodeForwardRequest(request.body));
    });
  });
}
