// Goal: the CLI's client of a node reads each answer's body within its retries: a connection cut
// mid-answer is sent again like one that never answered (read by the caller, it ended export,
// verify and import with a stack trace), and a 200 whose body is not JSON is an error naming the
// URL and status, not a SyntaxError. A read answered 429 is sent again after its Retry-After (export
// and verify stopped at the first one), as an ingest request is.
import { AuditErrorCode } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { NodeClient, RATE_LIMITED_ATTEMPTS_MAX } from '../src/node-client.js';

/** An answer whose body breaks off after its first bytes, as a connection closed mid-answer does. */
function cutAnswer(): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"events":[{"eventId":"e1"'));
      controller.error(new TypeError('terminated: other side closed'));
    },
  });
  return new Response(body, { status: 200, headers: { 'content-type': 'application/json' } });
}

describe('NodeClient', () => {
  it('sends a request again when its answer is cut mid-body, and gives the whole answer of the next', async () => {
    const retries: string[] = [];
    let calls = 0;
    const client = new NodeClient({
      url: 'http://127.0.0.1:1',
      token: 't',
      sleep: async () => undefined,
      onRetry: (reason) => void retries.push(reason),
      fetch: async () => (++calls === 1 ? cutAnswer() : new Response('{"events":[]}', { status: 200 })),
    });
    const answer = await client.request('/admin/audit');
    expect(await answer.json()).toEqual({ events: [] });
    expect(calls).toBe(2);
    expect(retries).toEqual([expect.stringContaining('other side closed') as unknown]);
  });

  it('fails naming the URL after its attempts when every answer is cut', async () => {
    const client = new NodeClient({ url: 'http://127.0.0.1:1', token: 't', attemptsMax: 3, sleep: async () => undefined, fetch: async () => cutAnswer() });
    await expect(client.request('/admin/audit')).rejects.toMatchObject({ code: AuditErrorCode.UNREACHABLE, message: expect.stringMatching(/^http:\/\/127\.0\.0\.1:1\/admin\/audit: no answer after 3 attempts; the last: .*other side closed/) as unknown });
  });

  it('reads a 200 whose body is not JSON as an error naming the URL and the status', async () => {
    const client = new NodeClient({ url: 'http://127.0.0.1:1', token: 't', fetch: async () => new Response('<html>main</html>', { status: 200 }) });
    const answer = await client.request('/v1/api/audit');
    expect(await answer.text()).toBe('<html>main</html>');
    await expect(answer.json()).rejects.toMatchObject({ code: AuditErrorCode.UNREACHABLE, message: 'http://127.0.0.1:1/v1/api/audit answered 200 with a body that is not JSON: <html>main</html>' });
  });

  it('sends a request answered 429 again after its Retry-After, at most RATE_LIMITED_ATTEMPTS_MAX times, a read as an ingest', async () => {
    const pauses: number[] = [];
    let limited = 2;
    const tooMany = () => new Response('{"error":"slow down"}', { status: 429, headers: { 'retry-after': '3' } });
    const client = new NodeClient({ url: 'http://127.0.0.1:1', token: 't', sleep: async (ms) => void pauses.push(ms), fetch: async () => (limited-- > 0 ? tooMany() : new Response('{"events":[]}', { status: 200 })) });
    expect(await (await client.request('/admin/audit')).json()).toEqual({ events: [] });
    expect(pauses).toEqual([3000, 3000]);
    const always = new NodeClient({ url: 'http://127.0.0.1:1', token: 't', sleep: async () => undefined, fetch: async () => tooMany() });
    await expect(always.request('/admin/audit')).rejects.toMatchObject({ code: AuditErrorCode.UNREACHABLE, message: `http://127.0.0.1:1/admin/audit answered 429 (too many requests) ${RATE_LIMITED_ATTEMPTS_MAX} times: slow down` });
    await expect(always.request('/v1/api/audit', { method: 'POST', body: '[]' })).rejects.toMatchObject({ code: AuditErrorCode.UNREACHABLE, message: `http://127.0.0.1:1/v1/api/audit answered 429 (too many requests) ${RATE_LIMITED_ATTEMPTS_MAX} times: slow down` });
    // Told one attempt (import's optional settings read), a 429 is answered at once, not waited out.
    const once = new NodeClient({ url: 'http://127.0.0.1:1', token: 't', rateLimitedAttemptsMax: 1, sleep: async () => { throw new Error('must not wait'); }, fetch: async () => tooMany() });
    expect((await once.request('/admin/audit/settings')).status).toBe(429);
  });
});
