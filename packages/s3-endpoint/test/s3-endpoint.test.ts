// Goal: the endpoint stores and serves only what a request signed with its key asks for, keeps every key inside its bucket directory, and answers like S3 (conditional PUT, listings past 1,000 keys).
import { connect } from 'node:net';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3ServiceException,
  type S3Client,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { compareKeys, signedFetch } from '../src/index.js';
import { BUCKET, CREDENTIALS, errorCode, startFixture } from './endpoint-fixture.js';
import { rawRequest, sha256Hex, signedHeaders, signer } from './raw-request.js';

async function s3Error(promise: Promise<unknown>): Promise<{ name: string; status: number | undefined; message: string }> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof S3ServiceException) return { name: err.name, status: err.$metadata.httpStatusCode, message: err.message };
    throw err;
  }
  throw new Error('the request succeeded');
}

async function text(client: S3Client, key: string): Promise<string> {
  const res = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return res.Body!.transformToString();
}

async function listAll(client: S3Client, options: { prefix?: string; pageSize?: number } = {}): Promise<{ keys: string[]; pages: number }> {
  const keys: string[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const res = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: options.prefix, ContinuationToken: token, MaxKeys: options.pageSize }));
    pages += 1;
    for (const item of res.Contents ?? []) keys.push(item.Key!);
    token = res.IsTruncated ? res.NextContinuationToken : undefined;
    if (res.IsTruncated) expect(token).toBeTruthy();
  } while (token);
  return { keys, pages };
}

async function putMany(client: S3Client, keys: string[], concurrency = 8): Promise<void> {
  const queue = [...keys];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let key = queue.shift(); key !== undefined; key = queue.shift()) await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: key }));
    }),
  );
}

describe('signed requests (AWS SDK)', () => {
  it('put, get, ranged get, head, list and delete work with the endpoint key; content type and ETag are kept', async () => {
    const f = await startFixture();
    const client = f.client();
    const put = await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'wh/ns/t/data/event_date=2026-05-01/f 1.parquet', Body: 'hello world', ContentType: 'application/vnd.apache.parquet' }));
    expect(put.ETag).toBe('"5eb63bbbe01eeed093cb22bb8f5acdc3"');
    expect(await text(client, 'wh/ns/t/data/event_date=2026-05-01/f 1.parquet')).toBe('hello world');
    const range = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'wh/ns/t/data/event_date=2026-05-01/f 1.parquet', Range: 'bytes=6-10' }));
    expect(await range.Body!.transformToString()).toBe('world');
    const head = await client.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'wh/ns/t/data/event_date=2026-05-01/f 1.parquet' }));
    expect(head.ContentLength).toBe(11);
    expect(head.ContentType).toBe('application/vnd.apache.parquet');
    expect(head.ETag).toBe(put.ETag);
    await client.send(new HeadBucketCommand({ Bucket: BUCKET }));
    expect((await client.send(new ListBucketsCommand({}))).Buckets?.map((b) => b.Name)).toEqual([BUCKET]);
    expect((await listAll(client)).keys).toEqual(['wh/ns/t/data/event_date=2026-05-01/f 1.parquet']);
    await client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: 'wh/ns/t/data/event_date=2026-05-01/f 1.parquet' }));
    expect((await s3Error(client.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'wh/ns/t/data/event_date=2026-05-01/f 1.parquet' })))).name).toBe('NoSuchKey');
    // The emptied directories go with the object.
    expect((await f.files()).filter((p) => !p.startsWith('s3/.incoming'))).toEqual([]);
  });

  it('refuses a wrong secret, an unknown key id and a request signed too long ago, and stores nothing', async () => {
    const f = await startFixture();
    const wrongSecret = await s3Error(f.client({ ...CREDENTIALS, secretAccessKey: 'not-the-secret' }).send(new PutObjectCommand({ Bucket: BUCKET, Key: 'x', Body: 'x' })));
    expect(wrongSecret).toMatchObject({ name: 'SignatureDoesNotMatch', status: 403 });
    const unknownKey = await s3Error(f.client({ accessKeyId: 'SOMEONEELSE', secretAccessKey: CREDENTIALS.secretAccessKey }).send(new GetObjectCommand({ Bucket: BUCKET, Key: 'x' })));
    expect(unknownKey).toMatchObject({ name: 'InvalidAccessKeyId', status: 403 });
    // The endpoint's clock runs 20 minutes ahead of the signer's.
    const skewed = await startFixture({ now: () => Date.now() + 20 * 60_000 });
    expect(await s3Error(skewed.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: 'x', Body: 'x' })))).toMatchObject({ name: 'RequestTimeTooSkewed', status: 403 });
    expect((await f.files()).filter((p) => !p.startsWith('s3/.incoming'))).toEqual([]);
    expect((await skewed.files()).filter((p) => !p.startsWith('s3/.incoming'))).toEqual([]);
  });

  it('refuses a signed request sent to another key, or with a body other than the one signed', async () => {
    const f = await startFixture();
    await f.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: 'secret/a', Body: 'a' }));
    const before = await f.files();
    const forA = await signedHeaders(f.endpoint.url, CREDENTIALS, 'GET', `/${BUCKET}/secret/a`, sha256Hex(''));
    expect((await rawRequest(f.endpoint.url, 'GET', `/${BUCKET}/secret/a`, forA)).status).toBe(200);
    const moved = await rawRequest(f.endpoint.url, 'GET', `/${BUCKET}/secret/b`, forA);
    expect([moved.status, errorCode(moved.body)]).toEqual([403, 'SignatureDoesNotMatch']);
    const deleteWithGetSignature = await rawRequest(f.endpoint.url, 'DELETE', `/${BUCKET}/secret/a`, forA);
    expect([deleteWithGetSignature.status, errorCode(deleteWithGetSignature.body)]).toEqual([403, 'SignatureDoesNotMatch']);

    const forGood = await signedHeaders(f.endpoint.url, CREDENTIALS, 'PUT', `/${BUCKET}/secret/c`, sha256Hex('good'));
    const swapped = await rawRequest(f.endpoint.url, 'PUT', `/${BUCKET}/secret/c`, forGood, 'evil');
    expect([swapped.status, errorCode(swapped.body)]).toEqual([400, 'XAmzContentSHA256Mismatch']);
    expect(await f.files()).toEqual(before);
    expect((await rawRequest(f.endpoint.url, 'PUT', `/${BUCKET}/secret/c`, forGood, 'good')).status).toBe(200);
  });

  it('answers a presigned GET until it expires, and only for the object it was signed for', async () => {
    const f = await startFixture();
    await f.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: 'p/q.txt', Body: 'presigned' }));
    const url = new URL(f.endpoint.url);
    const presigned = await signer(CREDENTIALS).presign(
      { method: 'GET', protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: `/${BUCKET}/p/q.txt`, query: {}, headers: { host: url.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } },
      { expiresIn: 60 },
    );
    const search = new URLSearchParams(presigned.query as Record<string, string>).toString();
    const ok = await fetch(`${f.endpoint.url}/${BUCKET}/p/q.txt?${search}`);
    expect([ok.status, await ok.text()]).toEqual([200, 'presigned']);
    const other = await fetch(`${f.endpoint.url}/${BUCKET}/p/r.txt?${search}`);
    expect([other.status, errorCode(await other.text())]).toEqual([403, 'SignatureDoesNotMatch']);
    const later = await startFixture({ now: () => Date.now() + 120_000 });
    await later.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: 'p/q.txt', Body: 'presigned' }));
    const presignedLater = new URL(later.endpoint.url);
    const expiredUrl = await signer(CREDENTIALS).presign(
      { method: 'GET', protocol: 'http:', hostname: presignedLater.hostname, port: Number(presignedLater.port), path: `/${BUCKET}/p/q.txt`, query: {}, headers: { host: presignedLater.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' } },
      { expiresIn: 60 },
    );
    const expired = await fetch(`${later.endpoint.url}/${BUCKET}/p/q.txt?${new URLSearchParams(expiredUrl.query as Record<string, string>).toString()}`);
    expect([expired.status, errorCode(await expired.text())]).toEqual([403, 'AccessDenied']);
  });

  it('signedFetch (for readers that cannot sign) reads objects, ranges included', async () => {
    const f = await startFixture();
    await f.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: 'wh/data/event_date=2026-05-01/a b!.parquet', Body: '0123456789' }));
    const get = signedFetch({ credentials: CREDENTIALS });
    const res = await get(`${f.endpoint.url}/${BUCKET}/wh/data/event_date=2026-05-01/a%20b!.parquet`, { headers: { range: 'bytes=2-4' } });
    expect([res.status, await res.text()]).toEqual([206, '234']);
    const wrong = signedFetch({ credentials: { ...CREDENTIALS, secretAccessKey: 'wrong' } });
    expect((await wrong(`${f.endpoint.url}/${BUCKET}/wh/data/event_date=2026-05-01/a%20b!.parquet`)).status).toBe(403);
  });
});

describe('unsigned requests', () => {
  it('are refused (403, S3 XML) for every operation, and a traversal PUT writes nothing anywhere', async () => {
    const f = await startFixture();
    await f.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: 'tiered/history.parquet', Body: 'history' }));
    const before = await f.files();
    const attempts: Array<[string, string]> = [
      ['GET', `/${BUCKET}/tiered/history.parquet`],
      ['HEAD', `/${BUCKET}/tiered/history.parquet`],
      ['GET', `/${BUCKET}?list-type=2`],
      ['GET', `/${BUCKET}`],
      ['GET', '/'],
      ['DELETE', `/${BUCKET}/tiered/history.parquet`],
      ['PUT', `/${BUCKET}/tiered/history.parquet`],
      ['PUT', `/${BUCKET}/..%2F..%2F..%2Fx.txt`],
      ['PUT', `/${BUCKET}/../../x.txt`],
      ['PUT', '/newbucket'],
      ['POST', `/${BUCKET}?delete`],
    ];
    for (const [method, path] of attempts) {
      const res = await rawRequest(f.endpoint.url, method, path, { 'content-type': 'text/plain' }, method === 'PUT' || method === 'POST' ? 'overwritten' : undefined);
      expect(res.status, `${method} ${path}`).toBe(403);
      if (method !== 'HEAD') expect(errorCode(res.body), `${method} ${path}`).toBe('AccessDenied');
    }
    expect(await f.files()).toEqual(before);
    expect(await text(f.client(), 'tiered/history.parquet')).toBe('history');
  });

  it('with public read: unsigned GET and HEAD of objects work, listings, writes and deletes still do not', async () => {
    const f = await startFixture({ publicRead: true });
    await f.client().send(new PutObjectCommand({ Bucket: BUCKET, Key: 'tiered/history.parquet', Body: 'history' }));
    const before = await f.files();
    const get = await fetch(`${f.endpoint.url}/${BUCKET}/tiered/history.parquet`, { headers: { range: 'bytes=0-3' } });
    expect([get.status, await get.text()]).toEqual([206, 'hist']);
    expect((await fetch(`${f.endpoint.url}/${BUCKET}/tiered/history.parquet`, { method: 'HEAD' })).status).toBe(200);
    for (const [method, path] of [
      ['GET', `/${BUCKET}?list-type=2`],
      ['GET', `/${BUCKET}`],
      ['GET', '/'],
      ['HEAD', `/${BUCKET}`],
      ['DELETE', `/${BUCKET}/tiered/history.parquet`],
      ['PUT', `/${BUCKET}/tiered/history.parquet`],
      ['PUT', `/${BUCKET}/..%2F..%2Fx.txt`],
      ['POST', `/${BUCKET}?delete`],
    ] as const) {
      const res = await rawRequest(f.endpoint.url, method, path, {}, method === 'PUT' || method === 'POST' ? 'x' : undefined);
      expect(res.status, `${method} ${path}`).toBe(403);
    }
    // Sub-resources of an object are not "the object".
    expect((await fetch(`${f.endpoint.url}/${BUCKET}/tiered/history.parquet?acl`)).status).toBe(501);
    expect(await f.files()).toEqual(before);
  });
});

describe('object keys', () => {
  it('refuses keys with empty, . or .. segments, control characters or reserved names before anything is stored', async () => {
    const f = await startFixture();
    const client = f.client();
    const before = await f.files();
    for (const key of ['../../../x.txt', 'a/../../../x.txt', 'a/./b', './a', 'a//b', '/a', 'a//', '/', '..', '../', 'a\nb', 'a/x._S3rver_object', `${'s'.repeat(231)}/x`]) {
      const refused = await s3Error(client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: 'x' })));
      expect(refused, JSON.stringify(key)).toMatchObject({ name: 'InvalidArgument', status: 400 });
    }
    // Percent-encoded slashes decode to the same keys: refused too.
    const encoded = `/${BUCKET}/..%2F..%2F..%2Fx.txt`;
    const res = await rawRequest(f.endpoint.url, 'PUT', encoded, await signedHeaders(f.endpoint.url, CREDENTIALS, 'PUT', encoded, sha256Hex('x')), 'x');
    expect([res.status, errorCode(res.body)]).toEqual([400, 'InvalidArgument']);
    expect(await f.files()).toEqual(before);
  });

  it('stores a directory marker (a key ending in one /) beside the keys under it', async () => {
    const f = await startFixture();
    const client = f.client();
    await putMany(client, ['wh/ops/', 'wh/ops/t/x', 'wh/ops.x']);
    expect((await listAll(client)).keys).toEqual(['wh/ops.x', 'wh/ops/', 'wh/ops/t/x']);
    expect(await text(client, 'wh/ops/')).toBe('wh/ops/');
    await client.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: 'wh/ops/' }));
    expect((await listAll(client)).keys).toEqual(['wh/ops.x', 'wh/ops/t/x']);
  });

  it('serves only its own buckets and only the operations it knows', async () => {
    const f = await startFixture();
    const client = f.client();
    expect(await s3Error(client.send(new PutObjectCommand({ Bucket: 'other', Key: 'x', Body: 'x' })))).toMatchObject({ name: 'NoSuchBucket', status: 404 });
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'src', Body: 'x' }));
    expect(await s3Error(client.send(new CopyObjectCommand({ Bucket: BUCKET, Key: 'dst', CopySource: `${BUCKET}/src` })))).toMatchObject({ name: 'NotImplemented', status: 501 });
    const uploads = `/${BUCKET}/big?uploads`;
    const res = await rawRequest(f.endpoint.url, 'POST', uploads, await signedHeaders(f.endpoint.url, CREDENTIALS, 'POST', uploads, sha256Hex('')));
    expect([res.status, errorCode(res.body)]).toEqual([501, 'NotImplemented']);
    expect((await listAll(client)).keys).toEqual(['src']);
  });
});

describe('If-None-Match: * on PUT', () => {
  it('lets exactly one of many concurrent creators win; the rest get 412 and the winner stays', async () => {
    const f = await startFixture();
    const client = f.client();
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'metadata/v2.metadata.json', Body: `writer ${i}`, IfNoneMatch: '*' }))),
    );
    const winners = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
    expect(winners).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } });
    expect(await text(client, 'metadata/v2.metadata.json')).toBe(`writer ${winners[0]!}`);
    // Without the condition a PUT replaces.
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'metadata/v2.metadata.json', Body: 'replaced' }));
    expect(await text(client, 'metadata/v2.metadata.json')).toBe('replaced');
  });
});

describe('listings', () => {
  it('come back in S3 key order and page with continuation tokens, whatever the file-system order', async () => {
    const f = await startFixture();
    const client = f.client();
    // Keys where directory order and key order differ: '.' and '-' sort before '/', 'é' and '😀' after 'z'.
    const keys = ['a', 'a.b', 'a/b', 'a/b/c', 'a-b', 'ab', 'a0', 'b', 'é', 'z/😀', 'z/\uffef', 'z/y', ...Array.from({ length: 30 }, (_, i) => `d/${String(i).padStart(2, '0')}`)];
    await putMany(client, keys);
    const expected = [...keys].sort(compareKeys);
    expect((await listAll(client)).keys).toEqual(expected);
    const paged = await listAll(client, { pageSize: 7 });
    expect(paged.keys).toEqual(expected);
    expect(paged.pages).toBe(Math.ceil(keys.length / 7));
    expect((await listAll(client, { prefix: 'a/', pageSize: 1 })).keys).toEqual(['a/b', 'a/b/c']);

    const rolled = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Delimiter: '/' }));
    expect(rolled.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['a/', 'd/', 'z/']);
    expect(rolled.Contents?.map((c) => c.Key)).toEqual(['a', 'a-b', 'a.b', 'a0', 'ab', 'b', 'é']);
    // Paging through a delimited listing two entries at a time answers every entry once.
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const res = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Delimiter: '/', MaxKeys: 2, ContinuationToken: token }));
      seen.push(...(res.Contents ?? []).map((c) => c.Key!), ...(res.CommonPrefixes ?? []).map((p) => p.Prefix!));
      token = res.NextContinuationToken;
    } while (token);
    expect(seen.sort(compareKeys)).toEqual(['a', 'a-b', 'a.b', 'a/', 'a0', 'ab', 'b', 'd/', 'é', 'z/'].sort(compareKeys));

    const v1 = await client.send(new ListObjectsCommand({ Bucket: BUCKET, Prefix: 'd/', Marker: 'd/27' }));
    expect(v1.Contents?.map((c) => c.Key)).toEqual(['d/28', 'd/29']);
  });

  it('go past 1,000 keys (ListObjectsV2 continuation)', async () => {
    const f = await startFixture();
    const client = f.client();
    const keys = Array.from({ length: 1_050 }, (_, i) => `wh/data/${String(i).padStart(5, '0')}.parquet`);
    await putMany(client, keys, 16);
    const listed = await listAll(client, { prefix: 'wh/' });
    expect(listed.pages).toBe(2);
    expect(listed.keys).toEqual(keys);
    // 1,050 signed PUTs: a liveness bound only, generous because a loaded 2-core machine shared
    // by several test runs took over 120 s for them.
  }, 600_000);
});

describe('DeleteObjects', () => {
  it('deletes the named keys, and refuses the whole batch when one key is unsafe', async () => {
    const f = await startFixture();
    const client = f.client();
    await putMany(client, ['x/1', 'x/2', 'x/3']);
    const refused = await s3Error(client.send(new DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Objects: [{ Key: 'x/1' }, { Key: '../../etc' }] } })));
    expect(refused).toMatchObject({ name: 'InvalidArgument', status: 400 });
    expect((await listAll(client)).keys).toEqual(['x/1', 'x/2', 'x/3']);
    const res = await client.send(new DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Objects: [{ Key: 'x/1' }, { Key: 'x/3' }, { Key: 'x/absent' }] } }));
    expect(res.Deleted?.map((d) => d.Key)).toEqual(['x/1', 'x/3', 'x/absent']);
    expect((await listAll(client)).keys).toEqual(['x/2']);
  });
});

describe('lifecycle', () => {
  it('listens only on its host, and close() is idempotent', async () => {
    const f = await startFixture();
    expect(f.endpoint.url).toBe(`http://127.0.0.1:${f.endpoint.port}`);
    // 127.0.0.2 is loopback too, but nothing listens there for this port.
    const otherAddress = await new Promise<string>((resolve) => {
      const socket = connect({ host: '127.0.0.2', port: f.endpoint.port });
      socket.once('connect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    });
    expect(otherAddress).toBe('ECONNREFUSED');
    await f.endpoint.close();
    await f.endpoint.close();
    await expect(fetch(`${f.endpoint.url}/`)).rejects.toThrow();
  });
});
