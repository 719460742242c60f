import { DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, ListObjectsCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { ByteSource } from '@auditlake/format';
import { AuditError, AuditErrorCode } from '@auditlake/model';

/** Every S3 call gets this deadline: a sweep must fail (and back off), never hang. */
const REQUEST_TIMEOUT_MS = 15_000;

/** Keys one ListObjectsV2 page holds at most (the S3 maximum). */
const LIST_PAGE_KEYS_MAX = 1000;

/** What a HEAD tells about an object. */
export interface ObjectHead {
  bytes: number;
  lastModifiedMs: number;
}

/** One object of a listing. */
export interface ListedObject {
  key: string;
  bytes: number;
  lastModifiedMs: number;
}

/** The fields of an AWS SDK error this module looks at; nothing else leaves it. */
interface SdkErrorShape {
  name?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

function isNotFound(e: SdkErrorShape): boolean {
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404;
}

function isPreconditionFailed(e: SdkErrorShape): boolean {
  return e.name === 'PreconditionFailed' || e.$metadata?.httpStatusCode === 412;
}

/**
 * The one place an AWS SDK error becomes an `AuditError`: callers see a stable code (not found,
 * already exists, or the store failed) and a message naming the object and the operation.
 */
function storeError(err: unknown, operation: string, url: string): AuditError {
  const e = (typeof err === 'object' && err !== null ? err : {}) as SdkErrorShape;
  if (isNotFound(e)) return new AuditError(AuditErrorCode.OBJECT_NOT_FOUND, `${url} does not exist (${operation})`, { cause: err });
  if (isPreconditionFailed(e)) return new AuditError(AuditErrorCode.OBJECT_EXISTS, `${url} already exists (${operation} If-None-Match)`, { cause: err });
  const timedOut = e.name === 'TimeoutError' || e.name === 'AbortError';
  const reason = timedOut ? `no answer within ${REQUEST_TIMEOUT_MS} ms` : (notS3Answer(e) ?? `${e.name && e.name !== 'Error' ? `${e.name}: ` : ''}${e.message || String(err)}`);
  return new AuditError(AuditErrorCode.OBJECT_STORE_FAILED, `${operation} ${url} failed: ${reason}`, { cause: err, retryable: true });
}

/** What an HTTP status says about an endpoint's answer, for a person fixing a connection. */
const STATUS_HINTS: Record<number, string> = {
  400: 'the request was refused as malformed',
  401: 'access denied: check the connection\'s accessKeyId and secretAccessKey',
  403: 'access denied: check the connection\'s accessKeyId and secretAccessKey, and that they may use this bucket',
  404: 'not found: check the bucket and the connection\'s endpoint and forcePathStyle',
  405: 'the method is not allowed there: is the endpoint an S3 service?',
};

/**
 * A plain-words reason for an answer that was not an S3 answer: an endpoint that is not S3 (a
 * web server, a proxy's error page) makes the SDK fail with a raw XML parse error or an
 * `UnknownError`, which tells an operator nothing. Undefined for a real S3 error.
 */
function notS3Answer(e: SdkErrorShape): string | undefined {
  const message = e.message ?? '';
  const status = e.$metadata?.httpStatusCode;
  const at = status === undefined ? 'the endpoint' : `the endpoint answered HTTP ${status}`;
  if (/Deserialization error|XML parse error|char '.' is not expected/.test(message)) {
    return `${at} with a body that is not an S3 XML response: is the connection's endpoint an S3 service, and its forcePathStyle right?`;
  }
  if (e.name === 'Unknown' || message === 'UnknownError') {
    const hint = status === undefined ? undefined : STATUS_HINTS[status];
    return `${at} without an S3 error code${hint === undefined ? '' : ` (${hint})`}`;
  }
  return undefined;
}

/**
 * One bucket through one S3 connection: the few operations tiering and the reader need.
 * Not-found is an answer (`undefined` from `find`/`head`) or an `AUDIT_OBJECT_NOT_FOUND`
 * error, never an SDK error shape; every other failure is `AUDIT_OBJECT_STORE_FAILED`.
 */
export class ObjectStore {
  readonly bucket: string;
  readonly #client: S3Client;

  constructor(client: S3Client, bucket: string) {
    this.#client = client;
    this.bucket = bucket;
  }

  /** `s3://bucket/key`, as messages and Iceberg metadata name objects. */
  url(key = ''): string {
    return `s3://${this.bucket}/${key}`;
  }

  async #send<T>(operation: string, key: string, call: (abortSignal: AbortSignal) => Promise<T>): Promise<T> {
    try {
      return await call(AbortSignal.timeout(REQUEST_TIMEOUT_MS));
    } catch (err) {
      throw storeError(err, operation, this.url(key));
    }
  }

  async put(key: string, body: Uint8Array | string, contentType = 'application/octet-stream'): Promise<void> {
    await this.#send('PUT', key, (abortSignal) => this.#client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }), { abortSignal }));
  }

  /**
   * Creates `key` only if it does not exist (`If-None-Match: *`): true when the key now holds
   * `body` — created by this call, or by an attempt of it whose answer was lost — false when it
   * holds something else. A store that ignores the condition overwrites and answers true.
   *
   * The SDK sends a request again when its answer is lost (a reset connection, a timeout): a
   * create that succeeded the first time then meets its own object and is answered 412. Read as
   * "taken", a commit that had landed was reported lost (a review: a compaction's day counted
   * as lost although its marker applied). Every commit object holds text unique to its attempt
   * (random ids, attempt-named files), so equal bytes mean this create's.
   */
  async putIfAbsent(key: string, body: Uint8Array | string, contentType: string): Promise<boolean> {
    try {
      await this.#send('PUT', key, (abortSignal) =>
        this.#client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType, IfNoneMatch: '*' }), { abortSignal }),
      );
      return true;
    } catch (err) {
      if (!(err instanceof AuditError && err.code === AuditErrorCode.OBJECT_EXISTS)) throw err;
      const held = await this.find(key);
      return held !== undefined && Buffer.from(held).equals(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
    }
  }

  /** The object's bytes; `AUDIT_OBJECT_NOT_FOUND` when it does not exist. */
  async get(key: string): Promise<Uint8Array> {
    return this.#send('GET', key, async (abortSignal) => {
      const res = await this.#client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal });
      if (!res.Body) throw new Error('the answer has no body');
      return res.Body.transformToByteArray();
    });
  }

  /** The object's bytes, or undefined when it does not exist. */
  async find(key: string): Promise<Uint8Array | undefined> {
    try {
      return await this.get(key);
    } catch (err) {
      if (err instanceof AuditError && err.code === AuditErrorCode.OBJECT_NOT_FOUND) return undefined;
      throw err;
    }
  }

  async getRange(key: string, start: number, endExclusive: number): Promise<ArrayBuffer> {
    return this.#send('GET', key, async (abortSignal) => {
      const res = await this.#client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: `bytes=${start}-${endExclusive - 1}` }), { abortSignal });
      if (!res.Body) throw new Error('the answer has no body');
      const bytes = await res.Body.transformToByteArray();
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    });
  }

  /** Size and age of the object, or undefined when it does not exist. */
  async head(key: string): Promise<ObjectHead | undefined> {
    try {
      return await this.#send('HEAD', key, async (abortSignal) => {
        const res = await this.#client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal });
        return { bytes: res.ContentLength ?? 0, lastModifiedMs: res.LastModified?.getTime() ?? 0 };
      });
    } catch (err) {
      if (err instanceof AuditError && err.code === AuditErrorCode.OBJECT_NOT_FOUND) return undefined;
      throw err;
    }
  }

  /** True when the object exists. */
  async exists(key: string): Promise<boolean> {
    return (await this.head(key)) !== undefined;
  }

  /** Keys under `prefix` in key order, starting after `startAfter`, at most `max`. */
  async list(prefix: string, options: { startAfter?: string; max?: number } = {}): Promise<string[]> {
    return (await this.listObjects(prefix, options)).map((object) => object.key);
  }

  /**
   * Objects under `prefix` in key order (with size and age), starting after `startAfter`, at
   * most `max`. Pages go on from the last key seen (ListObjects with a marker) rather than a
   * ListObjectsV2 continuation token: every S3 implements the marker alike, while some small
   * S3 servers (s3rver 3.7.1 on Node 20) fail any V2 answer cut at 1,000 keys.
   */
  async listObjects(prefix: string, options: { startAfter?: string; max?: number } = {}): Promise<ListedObject[]> {
    const objects: ListedObject[] = [];
    const max = options.max ?? Number.MAX_SAFE_INTEGER;
    let after = options.startAfter;
    for (;;) {
      const res = await this.#send('LIST', prefix, (abortSignal) =>
        this.#client.send(
          new ListObjectsCommand({ Bucket: this.bucket, Prefix: prefix, ...(after ? { Marker: after } : {}), MaxKeys: Math.min(LIST_PAGE_KEYS_MAX, max - objects.length) }),
          { abortSignal },
        ),
      );
      const page = res.Contents ?? [];
      for (const item of page) if (item.Key) objects.push({ key: item.Key, bytes: item.Size ?? 0, lastModifiedMs: item.LastModified?.getTime() ?? 0 });
      const last = page.at(-1)?.Key;
      if (!res.IsTruncated || last === undefined || objects.length >= max) return objects;
      after = last;
    }
  }

  /** Deletes `key`; deleting a missing key is not an error (S3 answers 204 alike). */
  async delete(key: string): Promise<void> {
    await this.#send('DELETE', key, (abortSignal) => this.#client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal }));
  }

  /** Throws `AUDIT_OBJECT_STORE_FAILED` naming the reason when the bucket cannot be reached. */
  async checkReachable(): Promise<void> {
    await this.#send('HEAD', '', (abortSignal) => this.#client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal })).catch((err: unknown) => {
      // A HEAD on a missing bucket answers 404, which is not a missing key.
      if (err instanceof AuditError && err.code === AuditErrorCode.OBJECT_NOT_FOUND) {
        throw new AuditError(AuditErrorCode.OBJECT_STORE_FAILED, `bucket ${this.bucket} does not exist`, { cause: err.cause });
      }
      throw err;
    });
  }

  /**
   * A ranged reader over one object (hyparquet's AsyncBuffer). With `bytes` known (a commit or
   * manifest recorded the size) no HEAD request is made to learn it.
   */
  async byteSource(key: string, bytes?: number): Promise<ByteSource> {
    let byteLength = bytes;
    if (byteLength === undefined) {
      const head = await this.head(key);
      if (!head) throw new AuditError(AuditErrorCode.OBJECT_NOT_FOUND, `${this.url(key)} does not exist (HEAD)`);
      byteLength = head.bytes;
    }
    const length = byteLength;
    return { byteLength: length, slice: (start: number, end?: number) => this.getRange(key, start, end ?? length) };
  }
}
