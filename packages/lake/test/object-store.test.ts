// Goal: the object store answers not-found as `undefined` or a coded AuditError, and every other failure as a coded AuditError naming the object — never an AWS SDK error shape.
import { createServer } from 'node:net';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3Connections } from '../src/index.js';
import { useEmbeddedS3 } from '../src/testing/index.js';

const BUCKET = 'objects';
const CREDENTIALS = { accessKeyId: 'ALLAKETEST0000000001', secretAccessKey: 'lake-test-secret-0123456789abcdefghijk' };
const s3 = useEmbeddedS3('object-store-', BUCKET, CREDENTIALS);
/** Connection `s3` to the endpoint and `down` to a port nothing listens on (the fixture's own has only `s3`). */
let connections: S3Connections;

function connection(id: string, endpoint: string) {
  return [id, { id, endpoint, region: 'us-east-1', ...CREDENTIALS, forcePathStyle: true }] as const;
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  connections = new S3Connections(new Map([connection('s3', s3.server.url), connection('down', `http://127.0.0.1:${await closedPort()}`)]));
});

afterAll(() => {
  connections?.close();
  connections?.close(); // idempotent
});

async function thrown(promise: Promise<unknown>): Promise<AuditError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AuditError);
  expect(Object.keys(err as object)).not.toContain('$metadata');
  return err as AuditError;
}

describe('ObjectStore', () => {
  it('reports a missing object as undefined (find, head, exists) or AUDIT_OBJECT_NOT_FOUND (get, byteSource)', async () => {
    const objects = connections.bucket('s3', BUCKET);
    expect(await objects.find('nope/a')).toBeUndefined();
    expect(await objects.head('nope/a')).toBeUndefined();
    expect(await objects.exists('nope/a')).toBe(false);
    const err = await thrown(objects.get('nope/a'));
    expect(err.code).toBe(AuditErrorCode.OBJECT_NOT_FOUND);
    expect(err.message).toContain(`s3://${BUCKET}/nope/a`);
    expect((await thrown(objects.byteSource('nope/a'))).code).toBe(AuditErrorCode.OBJECT_NOT_FOUND);
  });

  it('reads back what it wrote, with size and age from HEAD', async () => {
    const objects = connections.bucket('s3', BUCKET);
    await objects.put('k/one', 'hello');
    expect(new TextDecoder().decode(await objects.get('k/one'))).toBe('hello');
    expect(new TextDecoder().decode(await objects.find('k/one'))).toBe('hello');
    const head = await objects.head('k/one');
    expect(head?.bytes).toBe(5);
    expect(Math.abs(head!.lastModifiedMs - Date.now())).toBeLessThan(60_000);
    const source = await objects.byteSource('k/one');
    expect(new TextDecoder().decode(await source.slice(1, 4))).toBe('ell');
    expect(await objects.list('k/')).toEqual(['k/one']);
  });

  it('reports an unreachable store as a retryable AUDIT_OBJECT_STORE_FAILED naming the object', async () => {
    const objects = connections.bucket('down', BUCKET);
    const calls = [() => objects.get('x/y'), () => objects.find('x/y'), () => objects.head('x/y'), () => objects.put('x/y', 'z'), () => objects.list('x/')];
    for (const call of calls) {
      const err = await thrown(call());
      expect(err.code).toBe(AuditErrorCode.OBJECT_STORE_FAILED);
      expect(err.retryable).toBe(true);
      expect(err.message).toContain(`s3://${BUCKET}/x/`);
    }
  });

  it('reports a missing bucket as AUDIT_OBJECT_STORE_FAILED, not as a missing object', async () => {
    const err = await thrown(connections.bucket('s3', 'no-such-bucket').checkReachable());
    expect(err.code).toBe(AuditErrorCode.OBJECT_STORE_FAILED);
    expect(err.message).toContain('no-such-bucket');
  });

  it('refuses an unknown connection with a coded error', () => {
    expect(() => connections.bucket('nope', BUCKET)).toThrow(expect.objectContaining({ code: AuditErrorCode.TIER_TARGET_UNUSABLE }));
  });
});
