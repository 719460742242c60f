// Goal: whatever key a signed client sends, the endpoint either refuses it before storing anything or stores it as exactly one object inside the bucket's directory, readable back under that key.
import { GetObjectCommand, PutObjectCommand, S3ServiceException } from '@aws-sdk/client-s3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { objectKeyProblem } from '../src/index.js';
import { BUCKET, CREDENTIALS, startFixture } from './endpoint-fixture.js';
import { rawRequest, sha256Hex, signedHeaders } from './raw-request.js';

/** Segments that have broken path handling somewhere: dots, empties, separators, encodings, non-ASCII. */
const segment = fc.oneof(
  fc.constantFrom('', '.', '..', '...', '.a', 'a.', '..a', '%2e%2e', '%2F', '\\', '\\..', '~', 'a b', 'é', '😀', '\u0000', '\n', 'x._S3rver_object', 'CON', '-'),
  fc.string({ maxLength: 6 }),
  fc.string({ maxLength: 4, unit: 'binary' }),
);
const key = fc.array(segment, { minLength: 1, maxLength: 5 }).map((parts) => parts.join('/'));

describe('object keys (property)', () => {
  it('are refused when the rule says so, else stored inside the bucket and read back intact', async () => {
    const f = await startFixture();
    const client = f.client();
    let stored = 0;
    await fc.assert(
      fc.asyncProperty(key, async (k) => {
        const before = await f.files();
        const problem = objectKeyProblem(k);
        const body = `body of ${JSON.stringify(k)}`;
        let refused: S3ServiceException | undefined;
        try {
          await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: k, Body: body }));
        } catch (err) {
          // A lone surrogate cannot even be percent-encoded: the SDK refuses to send it.
          if (err instanceof URIError) {
            expect(problem, JSON.stringify(k)).toBeDefined();
            expect(await f.files()).toEqual(before);
            return;
          }
          if (!(err instanceof S3ServiceException)) throw err;
          refused = err;
        }
        const after = await f.files();
        // Nothing is ever written outside the endpoint's directory.
        for (const path of after) expect(path.startsWith('s3/'), path).toBe(true);
        if (problem !== undefined) {
          // An empty key is a PUT on the bucket itself, which this endpoint does not serve.
          expect(refused?.name, JSON.stringify(k)).toBe(k === '' ? 'NotImplemented' : 'InvalidArgument');
          expect(after).toEqual(before);
          return;
        }
        expect(refused, JSON.stringify(k)).toBeUndefined();
        for (const path of after) expect(path.startsWith(`s3/${BUCKET}/`) || path.startsWith('s3/.incoming/'), path).toBe(true);
        stored += 1;
        const res = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: k }));
        expect(await res.Body!.transformToString()).toBe(body);
      }),
      { numRuns: 150 },
    );
    // The generator reaches both sides of the rule.
    expect(stored).toBeGreaterThan(10);
  }, 120_000);

  it('percent-encoded paths are judged by the key they decode to', async () => {
    const f = await startFixture();
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom('..', '.', '', 'a', '%2e%2e', 'b%2F..'), { minLength: 1, maxLength: 4 }), async (parts) => {
        const before = await f.files();
        const path = `/${BUCKET}/${parts.map((p) => p.replaceAll('/', '%2F')).join('%2F')}`;
        const res = await rawRequest(f.endpoint.url, 'PUT', path, await signedHeaders(f.endpoint.url, CREDENTIALS, 'PUT', path, sha256Hex('x')), 'x');
        const decoded = decodeURIComponent(path.slice(BUCKET.length + 2));
        if (objectKeyProblem(decoded) !== undefined) {
          // An empty key is a PUT on the bucket itself, which this endpoint does not serve.
          expect(res.status, path).toBe(decoded === '' ? 501 : 400);
          expect(await f.files()).toEqual(before);
        } else {
          expect(res.status, path).toBe(200);
        }
        for (const file of await f.files()) expect(file.startsWith('s3/'), file).toBe(true);
      }),
      { numRuns: 60 },
    );
  });
});
