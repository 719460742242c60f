import { request as httpRequest } from 'node:http';

/**
 * A GET to 127.0.0.1:`port` with exactly the given headers, over a real connection: fetch sets
 * Host itself, and these tests need to send a foreign one (as a DNS-rebound browser does).
 */
export function rawGet(port: number, path: string, headers: Record<string, string>): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
