// A loopback HTTP proxy in front of an S3 endpoint that can hold chosen requests until released:
// a deposed leader's PUT still in flight while its successor commits.
import { createServer, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HeldRequest {
  /** Resolves when a matching request arrived and is being held. */
  arrived: Promise<void>;
  /** Lets the held request go on to the endpoint; resolves when its answer came back. */
  release(): Promise<number>;
}

export interface HoldingProxy {
  endpoint: string;
  /** Every request passed on so far, in order of arrival (method and decoded path). */
  readonly requests: Array<{ method: string; path: string }>;
  /** Holds the next request for which `matches(method, decodedPath)` is true (once). */
  holdNext(matches: (method: string, path: string) => boolean): HeldRequest;
  close(): Promise<void>;
}

interface Hold {
  matches: (method: string, path: string) => boolean;
  arrive: () => void;
  gate: Promise<void>;
  answered: (status: number) => void;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Starts a proxy to `target` (http://127.0.0.1:port); requests and answers pass unchanged (signatures stay valid). */
export async function startHoldingProxy(target: string): Promise<HoldingProxy> {
  const upstream = new URL(target);
  const holds: Hold[] = [];
  const requests: Array<{ method: string; path: string }> = [];
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const path = decodeURIComponent((req.url ?? '/').split('?')[0] ?? '/');
      requests.push({ method: req.method ?? 'GET', path });
      const index = holds.findIndex((h) => h.matches(req.method ?? 'GET', path));
      const hold = index >= 0 ? holds.splice(index, 1)[0] : undefined;
      if (hold) {
        hold.arrive();
        await hold.gate;
      }
      const forwarded = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on('end', () => hold?.answered(answer.statusCode ?? 502));
      });
      forwarded.on('error', (err) => {
        res.destroy(err);
        hold?.answered(502);
      });
      forwarded.end(body);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    holdNext(matches) {
      let arrive!: () => void;
      let open!: () => void;
      let answered!: (status: number) => void;
      const arrived = new Promise<void>((resolve) => (arrive = resolve));
      const gate = new Promise<void>((resolve) => (open = resolve));
      const answer = new Promise<number>((resolve) => (answered = resolve));
      holds.push({ matches, arrive, gate, answered });
      return {
        arrived,
        release: () => {
          open();
          return answer;
        },
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
