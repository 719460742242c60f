// Serves objects (absolute URI → bytes) over HTTP on 127.0.0.1 with byte ranges, for readers
// that fetch tables by URL (icebird).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ObjectServer {
  base: string;
  objects: Map<string, Uint8Array>;
  close(): Promise<void>;
}

export async function startObjectServer(): Promise<ObjectServer> {
  const objects = new Map<string, Uint8Array>();
  let base = '';
  const server: Server = createServer((request, response) => {
    const body = objects.get(`${base}${request.url ?? ''}`);
    if (body === undefined || request.method !== 'GET') {
      response.writeHead(404).end();
      return;
    }
    const range = /^bytes=(\d*)-(\d*)$/.exec(request.headers.range ?? '');
    if (range === null) {
      response.writeHead(200, { 'content-length': body.byteLength }).end(body);
      return;
    }
    const start = range[1] === '' ? body.byteLength - Number(range[2]) : Number(range[1]);
    const end = range[1] !== '' && range[2] !== '' ? Number(range[2]) + 1 : body.byteLength;
    const part = body.subarray(start, Math.min(end, body.byteLength));
    response.writeHead(206, { 'content-length': part.byteLength, 'content-range': `bytes ${start}-${start + part.byteLength - 1}/${body.byteLength}` }).end(part);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, objects, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
