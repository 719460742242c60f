import { GetObjectCommand, HeadBucketCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { ByteSource } from '@auditlake/format';
import type { S3ConnectionConfig } from '@auditlake/model';

/** Every S3 call gets this deadline: a sweep must fail (and back off), never hang. */
const REQUEST_TIMEOUT_MS = 15_000;

/**
 * One bucket through one S3 connection: the few operations tiering and the reader need.
 * Reads of data files go through `byteSource`, which fetches only the byte ranges asked for.
 */
export class ObjectStore {
  readonly bucket: string;
  readonly #client: S3Client;

  constructor(client: S3Client, bucket: string) {
    this.#client = client;
    this.bucket = bucket;
  }

  #signal(): AbortSignal {
    return AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  }

  async put(key: string, body: Uint8Array | string, contentType = 'application/octet-stream'): Promise<void> {
    await this.#client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }), { abortSignal: this.#signal() });
  }

  /**
   * Creates `key` only if it does not exist (`If-None-Match: *`): the commit point of an
   * Iceberg version. A store that ignores the condition overwrites; callers read back.
   */
  async putIfAbsent(key: string, body: Uint8Array | string, contentType: string): Promise<void> {
    await this.#client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType, IfNoneMatch: '*' }), { abortSignal: this.#signal() });
  }

  async get(key: string): Promise<Uint8Array> {
    const res = await this.#client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: this.#signal() });
    if (!res.Body) throw new Error(`s3://${this.bucket}/${key} has no body`);
    return res.Body.transformToByteArray();
  }

  async getRange(key: string, start: number, endExclusive: number): Promise<ArrayBuffer> {
    const res = await this.#client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range: `bytes=${start}-${endExclusive - 1}` }), { abortSignal: this.#signal() });
    if (!res.Body) throw new Error(`s3://${this.bucket}/${key} has no body`);
    const bytes = await res.Body.transformToByteArray();
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  async size(key: string): Promise<number> {
    const res = await this.#client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: this.#signal() });
    return res.ContentLength ?? 0;
  }

  /** Keys under `prefix` in key order, starting after `startAfter`, at most `max`. */
  async list(prefix: string, options: { startAfter?: string; max?: number } = {}): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    const max = options.max ?? Number.MAX_SAFE_INTEGER;
    do {
      const res = await this.#client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          ...(token ? { ContinuationToken: token } : options.startAfter ? { StartAfter: options.startAfter } : {}),
          MaxKeys: Math.min(1000, max - keys.length),
        }),
        { abortSignal: this.#signal() },
      );
      for (const item of res.Contents ?? []) if (item.Key) keys.push(item.Key);
      token = res.IsTruncated ? res.NextContinuationToken : undefined;
    } while (token && keys.length < max);
    return keys;
  }

  /** Throws a readable error when the bucket cannot be reached with this connection. */
  async checkReachable(): Promise<void> {
    await this.#client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal: this.#signal() });
  }

  /** A ranged reader over one object (hyparquet's AsyncBuffer). */
  async byteSource(key: string): Promise<ByteSource> {
    const byteLength = await this.size(key);
    return { byteLength, slice: (start: number, end?: number) => this.getRange(key, start, end ?? byteLength) };
  }
}

/** S3 clients by connection id, from `auditlake.s3.connections.*`. */
export class S3Connections {
  readonly #configs: ReadonlyMap<string, S3ConnectionConfig>;
  readonly #clients = new Map<string, S3Client>();

  constructor(configs: ReadonlyMap<string, S3ConnectionConfig>) {
    this.#configs = configs;
  }

  has(id: string): boolean {
    return this.#configs.has(id);
  }

  get ids(): string[] {
    return [...this.#configs.keys()];
  }

  /** The bucket `bucket` through connection `id`; throws when no such connection is configured. */
  bucket(id: string, bucket: string): ObjectStore {
    const config = this.#configs.get(id);
    if (!config) throw new Error(`No S3 connection config for audit tier connection '${id}'`);
    let client = this.#clients.get(id);
    if (!client) {
      client = new S3Client({
        region: config.region,
        forcePathStyle: config.forcePathStyle,
        maxAttempts: 2,
        ...(config.endpoint ? { endpoint: config.endpoint } : {}),
        ...(config.accessKeyId ? { credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey } } : {}),
      });
      this.#clients.set(id, client);
    }
    return new ObjectStore(client, bucket);
  }

  close(): void {
    for (const client of this.#clients.values()) client.destroy();
    this.#clients.clear();
  }
}
