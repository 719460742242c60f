import { Agent, request } from 'node:http';

export interface HttpResponse {
  status: number;
  body: Buffer;
}

/** A keep-alive agent: benchmarks measure the server, not TCP handshakes. */
export function keepAliveAgent(maxSockets: number): Agent {
  return new Agent({ keepAlive: true, maxSockets });
}

/**
 * One HTTP request over `agent`, resolving with the whole body once it has arrived.
 * `timeoutMs` bounds the request so a stuck server cannot hang the benchmark.
 */
export function httpRequest(
  agent: Agent,
  url: URL,
  options: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: Buffer; timeoutMs: number },
): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const headers = { ...options.headers };
    if (options.body) headers['content-length'] = String(options.body.length);
    const req = request(url, { method: options.method, agent, headers, timeout: options.timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${options.method} ${url.pathname} timed out after ${options.timeoutMs} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });
}
