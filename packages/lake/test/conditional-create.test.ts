// Goal: the node's embedded endpoint refuses a second conditional create of a key with 412 and keeps the first object — also when creates race — while plain PUTs still overwrite; the probe accepts such a store and refuses one that ignores If-None-Match (s3rver, which does), naming the problem and leaving no probe object behind.
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectStore, probeConditionalCreate, S3Connections } from '../src/index.js';
import { useEmbeddedS3 } from '../src/testing/index.js';

const BUCKET = 'cond';
const CREDENTIALS = { accessKeyId: 'ALCONDTEST0000000001', secretAccessKey: 'cond-test-secret-0123456789abcdefghijk' };
/** s3rver's fixed key pair. */
const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
/** The endpoint a node embeds (connection `guarded`): honours If-None-Match. */
const s3 = useEmbeddedS3('conditional-create-', BUCKET, CREDENTIALS);
/** A real S3-compatible server that ignores If-None-Match on PUT and overwrites, in the fixture's temp dir. */
let plain: S3rver;
/** `guarded` and `plain` (the fixture's own connection is `s3`, to the embedded endpoint only). */
let connections: S3Connections;

beforeAll(async () => {
  plain = new S3rver({ address: '127.0.0.1', port: 0, directory: join(s3.dir, 'plain'), silent: true, configureBuckets: [{ name: BUCKET }], vhostBuckets: false });
  const plainEndpoint = `http://127.0.0.1:${(await plain.run()).port}`;
  const connection = (id: string, endpoint: string, credentials: typeof CREDENTIALS) => [id, { id, endpoint, region: 'us-east-1', ...credentials, forcePathStyle: true }] as const;
  connections = new S3Connections(new Map([connection('guarded', s3.server.url, CREDENTIALS), connection('plain', plainEndpoint, S3RVER_CREDENTIALS)]));
});

afterAll(async () => {
  connections?.close();
  plain?.httpServer?.closeAllConnections();
  await plain?.close();
});

const text = async (objects: ObjectStore, key: string) => new TextDecoder().decode(await objects.get(key));

describe('conditional create on the embedded endpoint', () => {
  it('creates a new key, refuses a second create with 412 and keeps the first object; a plain PUT still overwrites', async () => {
    const objects = connections.bucket('guarded', BUCKET);
    expect(await objects.putIfAbsent('a/v2.metadata.json', 'first', 'application/json')).toBe(true);
    expect(await objects.putIfAbsent('a/v2.metadata.json', 'second', 'application/json')).toBe(false);
    expect(await text(objects, 'a/v2.metadata.json')).toBe('first');
    // Keys with characters a URL encodes are guarded alike.
    expect(await objects.putIfAbsent('a/event_date=2026-01-01/x y.json', 'first', 'application/json')).toBe(true);
    expect(await objects.putIfAbsent('a/event_date=2026-01-01/x y.json', 'second', 'application/json')).toBe(false);
    await objects.put('a/v2.metadata.json', 'plain', 'application/json');
    expect(await text(objects, 'a/v2.metadata.json')).toBe('plain');
    // The connection is still usable after a refused PUT whose body was not read.
    expect(await objects.exists('a/v2.metadata.json')).toBe(true);
  });

  it('takes a create whose answer was lost, and which the SDK sent again only to be told 412, as made (review: a landed commit was reported lost)', async () => {
    // What the SDK does when a create's answer is lost: the same request again, which meets the object the first made.
    const client = new S3Client({ endpoint: s3.server.url, region: 'us-east-1', credentials: CREDENTIALS, forcePathStyle: true });
    const resent: string[] = [];
    client.middlewareStack.add(
      (next) => async (args) => {
        const input = args.input as { Key?: string; IfNoneMatch?: string };
        if (input.IfNoneMatch !== '*') return next(args);
        await next(args);
        resent.push(input.Key ?? '');
        return next(args);
      },
      { step: 'build', name: 'resendConditionalPut' },
    );
    try {
      const objects = new ObjectStore(client, BUCKET);
      expect(await objects.putIfAbsent('lost/v3.metadata.json', 'ours', 'application/json')).toBe(true);
      expect(await objects.putIfAbsent('lost/v4.metadata.json', new TextEncoder().encode('ours, as bytes'), 'application/json')).toBe(true);
      expect(resent).toEqual(['lost/v3.metadata.json', 'lost/v4.metadata.json']);
      expect(await text(objects, 'lost/v3.metadata.json')).toBe('ours');
      // Another writer's object under the key is still "taken".
      await objects.put('lost/v5.metadata.json', 'theirs', 'application/json');
      expect(await objects.putIfAbsent('lost/v5.metadata.json', 'ours', 'application/json')).toBe(false);
      expect(await text(objects, 'lost/v5.metadata.json')).toBe('theirs');
    } finally {
      client.destroy();
    }
  });

  it('of many racing creates of one key exactly one wins, and its bytes are stored', async () => {
    const objects = connections.bucket('guarded', BUCKET);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => objects.putIfAbsent('race/v7.metadata.json', `writer-${i}`, 'application/json')));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await text(objects, 'race/v7.metadata.json')).toBe(`writer-${results.indexOf(true)}`);
  });

  it('a store that ignores the header overwrites on a conditional create (what the probe catches)', async () => {
    const objects = connections.bucket('plain', BUCKET);
    expect(await objects.putIfAbsent('x/v2.metadata.json', 'first', 'application/json')).toBe(true);
    expect(await objects.putIfAbsent('x/v2.metadata.json', 'second', 'application/json')).toBe(true);
    expect(await text(objects, 'x/v2.metadata.json')).toBe('second');
  });
});

describe('probeConditionalCreate', () => {
  it('accepts a store that honours If-None-Match and leaves no probe object', async () => {
    const objects = connections.bucket('guarded', BUCKET);
    await probeConditionalCreate(objects, 'tier');
    expect(await objects.list('tier/')).toEqual([]);
  });

  it('refuses a store that ignores If-None-Match with AUDIT_TIER_TARGET_UNUSABLE naming it, and leaves no probe object', async () => {
    const objects = connections.bucket('plain', BUCKET);
    const err = await probeConditionalCreate(objects, 'tier').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuditError);
    expect((err as AuditError).code).toBe(AuditErrorCode.TIER_TARGET_UNUSABLE);
    expect((err as AuditError).message).toMatch(/^the store at s3:\/\/cond\/ ignores If-None-Match on PUT .* tiering to it is refused/);
    expect(await objects.list('tier/')).toEqual([]);
  });
});
