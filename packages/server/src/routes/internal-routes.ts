import type { ForwardRequest, ForwardResponse, PullRequest, PullResponse } from '@auditlake/cluster';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { matchesDigest, digest } from '../auth/constant-time.js';
import { CLUSTER_TOKEN_HEADER } from '../http-peer-transport.js';
import { PEER_PROOF_HEADER, PEER_SIGNATURE_HEADER, PeerNonces, bodyDigest, checkPeerRequest, peerAnswerProof, unsignedReason } from '../peer-auth.js';
import { PEER_WIRE_CONTENT_TYPE, decodeForwardRequest, encodePullResponse } from '../peer-wire.js';

/** What the internal endpoints call (the cluster node, once it has started). */
export interface InternalEndpoints {
  clusterToken(): Promise<string>;
  pull(request: PullRequest): Promise<PullResponse>;
  receiveForward(request: ForwardRequest): Promise<ForwardResponse>;
  /** `auditlake.cluster.secret` when set: requests must be signed with it, and answers prove it (peer-auth.ts). */
  secret?: string;
  /** The URL this node publishes to its peers, which a signed request names. */
  ownUrl(): string;
  now?: () => number;
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
      // With a secret, a request that carries no well-formed signature is refused before its body is read too.
      const unsigned = cluster.secret === undefined ? undefined : unsignedReason(request.headers[PEER_SIGNATURE_HEADER]);
      if (unsigned !== undefined) {
        reply.header('connection', 'close');
        return reply.code(401).send({ status: 'error', error: `internal endpoint: ${unsigned}`, code: 'AUDIT_UNAUTHENTICATED' });
      }
    });
    // Forwarded events arrive as NDJSON, kept as bytes and split into lines before decoding
    // (peer-wire.ts); scoped to these routes. A pull request's JSON is kept as bytes too: a
    // signed request's signature covers the bytes sent.
    internal.addContentTypeParser(PEER_WIRE_CONTENT_TYPE, { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    internal.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    const { secret } = cluster;
    /** Each signed request's signature, which its answer's proof covers. */
    const signatures = new WeakMap<FastifyRequest, string>();
    if (secret !== undefined) {
      const nonces = new PeerNonces();
      internal.addHook('preHandler', async (request, reply) => {
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const check = checkPeerRequest(secret, cluster.ownUrl() + request.url, request.headers[PEER_SIGNATURE_HEADER], bodyDigest([body]), (cluster.now ?? Date.now)(), nonces);
        if (!check.ok) return reply.code(401).send({ status: 'error', error: `internal endpoint: ${check.reason}`, code: 'AUDIT_UNAUTHENTICATED' });
        signatures.set(request, check.signature);
      });
    }
    /** Adds the answer's proof (over its bytes, `parts`) when requests are signed. */
    const proveAnswer = (request: FastifyRequest, reply: FastifyReply, parts: readonly Uint8Array[]): void => {
      const signature = signatures.get(request);
      if (secret !== undefined && signature !== undefined) reply.header(PEER_PROOF_HEADER, peerAnswerProof(secret, signature, bodyDigest(parts)));
    };
    internal.post('/internal/v1/pull', async (request, reply) => {
      let pull: PullRequest;
      try {
        pull = JSON.parse(Buffer.isBuffer(request.body) ? request.body.toString('utf8') : '') as PullRequest;
      } catch {
        return reply.code(400).send({ status: 'error', error: 'pull request must be a JSON object', code: 'AUDIT_BAD_REQUEST' });
      }
      const parts = encodePullResponse(await cluster.pull(pull));
      proveAnswer(request, reply, parts);
      // A few slices of the leader's log tail are written as they are: joining a 2,000-entry
      // answer into one buffer was a visible share of a busy leader's CPU. Entries read from
      // LevelDB are a buffer each, and thousands of tiny writes would cost more than the copy.
      return reply.type(PEER_WIRE_CONTENT_TYPE).send(parts.length <= PULL_PARTS_STREAMED_MAX ? Readable.from(parts) : Buffer.concat(parts));
    });
    // Forwarded batches can be larger than one client request.
    internal.post('/internal/v1/forward', { bodyLimit: 64 * 1024 * 1024 }, async (request, reply) => {
      if (!Buffer.isBuffer(request.body)) throw new TypeError(`forward request must be ${PEER_WIRE_CONTENT_TYPE}`);
      const body = Buffer.from(JSON.stringify(await cluster.receiveForward(decodeForwardRequest(request.body))), 'utf8');
      proveAnswer(request, reply, [body]);
      return reply.type('application/json').send(body);
    });
  });
}
