import { Agent, request as httpRequest } from 'node:http';
import type { ForwardRequest, ForwardResponse, PeerTransport, PullRequest } from '@auditlake/cluster';
import { PEER_PROOF_HEADER, PEER_SIGNATURE_HEADER, checkPeerAnswer, signPeerRequest } from './peer-auth.js';
import { PEER_WIRE_CONTENT_TYPE, decodePullResponse, encodeForwardRequest } from './peer-wire.js';

export const CLUSTER_TOKEN_HEADER = 'x-auditlake-cluster-token';

/**
 * How long a peer's last proof of the cluster secret vouches for it. A standby pulls from its
 * leader about every second (a long poll of 1 s), so a live leader is proven far more often; a
 * failed call ends it at once (an impostor on a dead leader's port was handed client requests
 * for the whole window before, in a review).
 */
export const PEER_PROOF_FRESH_MS = 10_000;

/** Peer calls with a close path: `close()` ends the kept-alive connections. */
export interface ClosablePeerTransport extends PeerTransport {
  /**
   * With a cluster secret: whether the peer at `peerUrl` answered with a proof of it within the
   * last PEER_PROOF_FRESH_MS, and nothing it was sent since failed (a standby's pulls from its
   * leader keep this fresh). Without one: true.
   */
  proven(peerUrl: string): boolean;
  close(): void;
}

/**
 * One POST over a kept-alive connection; resolves with the answer's body, rejects on a
 * non-2xx answer, a connection error or the deadline. node:http rather than fetch: fetch's
 * stream machinery cost the standbys a visible share of their CPU on multi-megabyte pulls.
 */
function post(agent: Agent, url: string, payload: Buffer, contentType: string, token: string, timeoutMs: number, secret: string | undefined, proven: (ok: boolean) => void): Promise<Buffer> {
  // With a cluster secret the request is signed for this URL and the answer must prove the secret (peer-auth.ts).
  const signature = secret === undefined ? undefined : signPeerRequest(secret, url, payload, Date.now());
  return new Promise<Buffer>((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': contentType, 'content-length': payload.length, [CLUSTER_TOKEN_HEADER]: token, ...(signature === undefined ? {} : { [PEER_SIGNATURE_HEADER]: signature }) },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          const status = res.statusCode ?? 0;
          if (status < 200 || status >= 300) reject(new Error(`${url} answered ${status}: ${body.subarray(0, 300).toString('utf8')}`));
          else if (secret !== undefined && signature !== undefined && !checkPeerAnswer(secret, signature, res.headers[PEER_PROOF_HEADER], body)) {
            reject(new Error(`${url} answered without proving the cluster secret (auditlake.cluster.secret): it is not a node of this cluster, or its secret differs; its answer is not used`));
          } else {
            proven(true);
            resolve(body);
          }
        });
      },
    );
    // `timeout` fires on an idle socket; the deadline below bounds the whole exchange.
    const deadline = setTimeout(() => req.destroy(new Error(`${url} did not answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('timeout', () => req.destroy(new Error(`${url} did not answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.on('close', () => clearTimeout(deadline));
    req.end(payload);
  }).catch((err: unknown) => {
    // Whatever failed (a refused proof, an error answer, the connection), the peer is unproven until it answers again.
    proven(false);
    throw err;
  });
}

/**
 * Peer calls over HTTP to the internal endpoints, with the cluster token and a deadline; with a
 * cluster secret (`secret`), signed, and their answers taken only when they prove it. A proof is
 * aged on `monotonicMs` (default `performance.now()`): on the wall clock, a step back made a
 * proof as old as the step fresh again (review).
 */
export function httpPeerTransport(clusterToken: () => Promise<string>, secret?: string, monotonicMs: () => number = () => performance.now()): ClosablePeerTransport {
  const agent = new Agent({ keepAlive: true });
  /** When each peer (by URL) last answered with a proof of the secret, since its last failure (monotonicMs). */
  const provenAtMs = new Map<string, number>();
  const noteProof = (peerUrl: string) => (ok: boolean) => void (ok ? provenAtMs.set(peerUrl, monotonicMs()) : provenAtMs.delete(peerUrl));
  const proven = (peerUrl: string): boolean => {
    if (secret === undefined) return true;
    const at = provenAtMs.get(peerUrl);
    return at !== undefined && monotonicMs() - at <= PEER_PROOF_FRESH_MS;
  };
  return {
    async pull(peerUrl: string, request: PullRequest, timeoutMs: number) {
      const body = await post(agent, `${peerUrl}/internal/v1/pull`, Buffer.from(JSON.stringify(request), 'utf8'), 'application/json', await clusterToken(), timeoutMs, secret, noteProof(peerUrl));
      return decodePullResponse(body);
    },
    async forward(peerUrl: string, request: ForwardRequest, timeoutMs: number) {
      // Events go only to a peer that proved the secret: the leader's URL comes from the
      // coordinator, and a fake leader it names got every forwarded event in full before its
      // unproven answer was refused (review). A pull, which carries no event, proves a leader.
      if (!proven(peerUrl)) {
        throw new Error(`${peerUrl} has not proven the cluster secret in the last ${PEER_PROOF_FRESH_MS / 1000} s (a pull from it answers with a proof): forwarded events wait in the outbox rather than go to a node that may not belong to this cluster`);
      }
      const body = await post(agent, `${peerUrl}/internal/v1/forward`, encodeForwardRequest(request), PEER_WIRE_CONTENT_TYPE, await clusterToken(), timeoutMs, secret, noteProof(peerUrl));
      return JSON.parse(body.toString('utf8')) as ForwardResponse;
    },
    proven,
    close() {
      agent.destroy();
    },
  };
}
