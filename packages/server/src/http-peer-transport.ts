import { Agent, request as httpRequest } from 'node:http';
import type { ForwardRequest, ForwardResponse, PeerTransport, PullRequest } from '@auditlake/cluster';
import { PEER_WIRE_CONTENT_TYPE, decodePullResponse, encodeForwardRequest } from './peer-wire.js';

export const CLUSTER_TOKEN_HEADER = 'x-auditlake-cluster-token';

/** Peer calls with a close path: `close()` ends the kept-alive connections. */
export interface ClosablePeerTransport extends PeerTransport {
  close(): void;
}

/**
 * One POST over a kept-alive connection; resolves with the answer's body, rejects on a
 * non-2xx answer, a connection error or the deadline. node:http rather than fetch: fetch's
 * stream machinery cost the standbys a visible share of their CPU on multi-megabyte pulls.
 */
function post(agent: Agent, url: string, payload: Buffer, contentType: string, token: string, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': contentType, 'content-length': payload.length, [CLUSTER_TOKEN_HEADER]: token },
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
          else resolve(body);
        });
      },
    );
    // `timeout` fires on an idle socket; the deadline below bounds the whole exchange.
    const deadline = setTimeout(() => req.destroy(new Error(`${url} did not answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('timeout', () => req.destroy(new Error(`${url} did not answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.on('close', () => clearTimeout(deadline));
    req.end(payload);
  });
}

/** Peer calls over HTTP to the internal endpoints, with the cluster token and a deadline. */
export function httpPeerTransport(clusterToken: () => Promise<string>): ClosablePeerTransport {
  const agent = new Agent({ keepAlive: true });
  return {
    async pull(peerUrl: string, request: PullRequest, timeoutMs: number) {
      const body = await post(agent, `${peerUrl}/internal/v1/pull`, Buffer.from(JSON.stringify(request), 'utf8'), 'application/json', await clusterToken(), timeoutMs);
      return decodePullResponse(body);
    },
    async forward(peerUrl: string, request: ForwardRequest, timeoutMs: number) {
      const body = await post(agent, `${peerUrl}/internal/v1/forward`, encodeForwardRequest(request), PEER_WIRE_CONTENT_TYPE, await clusterToken(), timeoutMs);
      return JSON.parse(body.toString('utf8')) as ForwardResponse;
    },
    close() {
      agent.destroy();
    },
  };
}
