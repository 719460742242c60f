// s3rver ships no types; this is the part auditlake uses (the s3-endpoint package, tests and benches include it).
declare module 's3rver' {
  import type { IncomingMessage, Server, ServerResponse } from 'node:http';
  interface S3rverOptions {
    address?: string;
    port?: number;
    directory: string;
    silent?: boolean;
    configureBuckets?: Array<{ name: string; configs?: Array<string | Buffer> }>;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
  }
  /** s3rver's file-backed store (lib/stores/filesystem.js). */
  interface FilesystemStore {
    /** Size, ETag (quoted MD5), Last-Modified and stored headers of one object; throws ENOENT when absent. */
    getMetadata(bucket: string, key: string): Promise<Record<string, string | number | undefined>>;
    existsObject(bucket: string, key: string): Promise<boolean>;
    putBucket(bucket: string): Promise<unknown>;
  }
  export default class S3rver {
    constructor(options: S3rverOptions);
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
    /** Koa's request listener: serves requests without s3rver listening anywhere. */
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
    readonly store: FilesystemStore;
    httpServer: Server | undefined;
  }
}
