import { S3Client } from '@aws-sdk/client-s3';
import { AuditError, AuditErrorCode, type S3ConnectionConfig } from '@auditlake/model';
import { ObjectStore } from './object-store.js';

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

  /**
   * Where connection `id` sends its requests, spelled one way — its endpoint URL as `URL`
   * normalises it, without a trailing slash, or for AWS's own endpoints the partition of its
   * region (bucket names are global within one: `aws`, `aws-cn`, `aws-us-gov`) — or undefined
   * for a connection not configured. Two ids with one answer reach the same buckets, unless the
   * store's namespace depends on the credentials (Ceph RGW tenants): credentials rotated under a
   * new connection id, say.
   */
  endpointOf(id: string): string | undefined {
    const config = this.#configs.get(id);
    if (!config) return undefined;
    if (config.endpoint === '') return config.region.startsWith('cn-') ? 'aws-cn' : config.region.startsWith('us-gov-') ? 'aws-us-gov' : 'aws';
    try {
      return new URL(config.endpoint).href.replace(/\/+$/, '');
    } catch {
      return config.endpoint;
    }
  }

  /** The bucket `bucket` through connection `id`; throws when no such connection is configured. */
  bucket(id: string, bucket: string): ObjectStore {
    const config = this.#configs.get(id);
    if (!config) throw new AuditError(AuditErrorCode.TIER_TARGET_UNUSABLE, `No S3 connection config for audit tier connection '${id}'`);
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

  /** Closes every client; idempotent. */
  close(): void {
    for (const client of this.#clients.values()) client.destroy();
    this.#clients.clear();
  }
}
