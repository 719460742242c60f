import type { ForwardRequest, ForwardResponse, PeerTransport, PullRequest, PullResponse } from '@auditlake/cluster';

export const CLUSTER_TOKEN_HEADER = 'x-auditlake-cluster-token';

async function postJson<T>(url: string, body: unknown, token: string, timeoutMs: number): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [CLUSTER_TOKEN_HEADER]: token },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${url} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

/** Peer calls over HTTP to the internal endpoints, with the cluster token and a deadline. */
export function httpPeerTransport(clusterToken: () => Promise<string>): PeerTransport {
  return {
    async pull(peerUrl: string, request: PullRequest, timeoutMs: number) {
      return postJson<PullResponse>(`${peerUrl}/internal/v1/pull`, request, await clusterToken(), timeoutMs);
    },
    async forward(peerUrl: string, request: ForwardRequest, timeoutMs: number) {
      return postJson<ForwardResponse>(`${peerUrl}/internal/v1/forward`, request, await clusterToken(), timeoutMs);
    },
  };
}
