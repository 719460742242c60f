// A loopback HTTP proxy in front of an S3 endpoint that records every request it passes on:
// what a test counts the GETs of a tier's data files by. Requests and answers pass unchanged,
// Host header included, so SigV4 signatures stay valid.
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProxiedRequest {
  method: string;
  /** The decoded path, `/<bucket>/<key>` (path-style). */
  path: string;
  /** The Range header, when the request had one. */
  range: string | undefined;
}

export interface CountingProxy {
  /** The URL to use as the S3 endpoint. */
  endpoint: string;
  /** Every request passed on, in order of arrival. */
  readonly requests: ProxiedRequest[];
  /** How many GETs each object whose key ends with `suffix` had, by key (`<bucket>/<key>`), since the last `clear()`. */
  getsOf(suffix: string): Map<string, number>;
  clear(): void;
  close(): Promise<void>;
}

/**
 * Starts a proxy to `target` (http://host:port). `before`, when given, is told of each request
 * as it arrives, and the request is passed on once what it returns has settled: what happens
 * in the bucket between a client's requests (an erasure deleting a file verify listed).
 */
export async function startCountingProxy(target: string, before?: (request: ProxiedRequest) => Promise<void> | undefined): Promise<CountingProxy> {
  const upstream = new URL(target);
  const requests: ProxiedRequest[] = [];
  const server = createServer((req, res) => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0] ?? '/');
    const proxied = { method: req.method ?? 'GET', path, range: req.headers.range };
    requests.push(proxied);
    void Promise.resolve(before?.(proxied)).then(() => {
      const forwarded = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      forwarded.on('error', (err) => res.destroy(err));
      req.pipe(forwarded);
    }, (err: unknown) => res.destroy(err instanceof Error ? err : new Error(String(err))));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    getsOf(suffix) {
      const gets = new Map<string, number>();
      for (const { method, path } of requests) {
        if (method !== 'GET' || !path.endsWith(suffix)) continue;
        const key = path.slice(1);
        gets.set(key, (gets.get(key) ?? 0) + 1);
      }
      return gets;
    },
    clear() {
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
