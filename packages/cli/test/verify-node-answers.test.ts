// Goal: `verify --url` tells the node's failures from its own usage errors: a 404 (a wrong --url
// path) or a 429 that goes on is the node's side (AUDIT_UNREACHABLE, exit 1), only a 400 is this
// command's request refused (AUDIT_BAD_REQUEST, exit 2); each names the URL and the status.
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyHistory } from '../src/verify-command.js';
import { parseVerifyOptions } from '../src/verify-options.js';

let server: Server | undefined;

afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server on loopback answering every request with `status` and a JSON error. */
async function answering(status: number): Promise<string> {
  server = createServer((_request, response) => {
    response.writeHead(status, { 'content-type': 'application/json', 'retry-after': '0' });
    response.end(JSON.stringify({ status: 'error', error: `answered ${status} on purpose` }));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return `http://127.0.0.1:${address.port}`;
}

describe('verify --url and what the node answers', () => {
  it.each([
    [404, 'AUDIT_UNREACHABLE'],
    [429, 'AUDIT_UNREACHABLE'],
    [400, 'AUDIT_BAD_REQUEST'],
  ] as const)('%i is %s, naming the URL and the status', async (status, code) => {
    const url = await answering(status);
    const run = verifyHistory(parseVerifyOptions(['--url', url, '--token', 't', '--threads', '0'], {}));
    await expect(run).rejects.toMatchObject({ code, message: expect.stringContaining(`${url}/admin/audit/integrity answered ${status}`) as unknown });
  }, 30_000);
});
