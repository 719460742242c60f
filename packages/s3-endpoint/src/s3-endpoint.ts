import { mkdir, rm, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import S3rver from 's3rver';
import { bucketNameProblem } from './bucket-name.js';
import { continuationToken, LISTING_KEYS_MAX, listBucketPage, parseContinuationToken, type ListingEntry } from './bucket-listing.js';
import { objectExists, placeObject, removeObject, storedMetadata } from './object-files.js';
import { objectKeyProblem } from './object-key.js';
import { encodePath, parseRequestTarget, uriEncode, type RequestTarget } from './request-target.js';
import { EMPTY_PAYLOAD_SHA256, UNSIGNED_PAYLOAD, verifySignature, type S3Credentials } from './request-signature.js';
import { classifyOperation, type S3Operation } from './s3-operation.js';
import { errorXml, S3Failure } from './s3-failure.js';
import { SerialQueue } from './serial-queue.js';
import { readSmallBody, stageBody } from './staged-body.js';
import { xmlDecode, xmlText } from './xml-text.js';

/** S3's own limit for one PUT. */
export const OBJECT_BYTES_MAX = 5 * 1024 ** 3;
/** A DeleteObjects body names at most 1,000 keys; 1 MiB is ample for that. */
const DELETE_BODY_BYTES_MAX = 1024 * 1024;
const DELETE_KEYS_MAX = 1000;
const XML_HEADER = '<?xml version="1.0" encoding="UTF-8"?>\n';
const S3_NAMESPACE = 'http://s3.amazonaws.com/doc/2006-03-01/';
/** Staged bodies live here, beside the buckets (a bucket name cannot start with a dot). */
const INCOMING_DIRECTORY = '.incoming';

export interface S3EndpointOptions {
  /** Where the buckets' files live (one directory per bucket). */
  directory: string;
  /** The address to listen on; the endpoint is reachable there and nowhere else. */
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Created at start when missing; requests naming any other bucket get NoSuchBucket. */
  buckets: readonly string[];
  /** Every request must be signed (AWS Signature Version 4) with this key pair. */
  credentials: S3Credentials;
  /** Also serve unsigned GET and HEAD of objects (never listings, writes or deletes). */
  publicRead?: boolean;
  /**
   * With `publicRead`: whether an unsigned read is answered under the request's `Host` (absent:
   * under any). A web page reaching the endpoint through DNS rebinding sends its own site's
   * name, so a caller that passes only the names it is reached by keeps such pages from reading
   * objects; a signed request covers its Host in the signature, so it is never asked.
   */
  publicReadHost?: (host: string | undefined) => boolean;
  /** Largest object accepted by a PUT; default S3's 5 GiB. */
  objectBytesMax?: number;
  now?: () => number;
  /** Told about failures that are the endpoint's, not the client's (answered 500). */
  onInternalError?: (err: unknown) => void;
  /**
   * Called with the HTTP server before it listens, e.g. to cap its connections. Node closes a
   * connection that never sends a byte only when it is told to, so without a cap anyone who
   * can reach the port holds as many as the process has file descriptors (review).
   */
  configureServer?: (server: Server) => void;
}

/** A running endpoint. `close()` stops listening and ends open connections; it is idempotent. */
export interface S3Endpoint extends AsyncDisposable {
  /** `http://host:port`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly credentials: S3Credentials;
  readonly buckets: readonly string[];
  close(): Promise<void>;
}

/** The URL of an endpoint listening on `host` and `port` (an IPv6 address in brackets). */
export function endpointUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

function resourceOf(target: RequestTarget | undefined): string {
  if (!target?.bucket) return '/';
  return target.key === undefined ? `/${target.bucket}` : `/${target.bucket}/${target.key}`;
}

function sendXml(res: ServerResponse, status: number, xml: string): void {
  res.writeHead(status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(xml) });
  res.end(xml);
}

function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
}

function parseMaxKeys(text: string | undefined): number {
  if (text === undefined) return LISTING_KEYS_MAX;
  if (!/^\d{1,10}$/.test(text)) throw new S3Failure(400, 'InvalidArgument', 'max-keys must be a whole number from 0');
  return Math.min(LISTING_KEYS_MAX, Number(text));
}

/**
 * An S3-compatible endpoint over files, for a node's `--embedded-s3` and for tests. s3rver's
 * request handler serves object reads; this server stands in front of it (s3rver itself never
 * listens) and does everything that decides what is stored and who may see it:
 *
 * - every request must carry a valid SigV4 signature for `credentials` (header or presigned
 *   URL), else 403 with an S3 XML error; with `publicRead`, unsigned GET/HEAD of objects only;
 * - keys must be plain relative paths (no empty, `.` or `..` segments), checked before storage;
 * - PUT bodies are staged, checked against the signed SHA-256, then moved into place in one
 *   rename; `If-None-Match: *` is honoured atomically (412 when the key exists);
 * - listings are answered here in S3 key order, past 1,000 keys with continuation tokens
 *   (s3rver 3.7.1 answers a truncated ListObjectsV2 with a 500 on Node 20: its tokens use DES).
 */
export async function startS3Endpoint(options: S3EndpointOptions): Promise<S3Endpoint> {
  for (const bucket of options.buckets) {
    const problem = bucketNameProblem(bucket);
    if (problem) throw new TypeError(`invalid bucket name '${bucket}': ${problem}`);
  }
  if (options.credentials.accessKeyId === '' || options.credentials.secretAccessKey === '') throw new TypeError('the endpoint needs a non-empty access key id and secret key');
  if (process.platform === 'win32') throw new TypeError('the embedded S3 endpoint stores keys as POSIX paths; it does not run on Windows');
  const incoming = join(options.directory, INCOMING_DIRECTORY);
  // Bodies staged when the process last stopped were never acknowledged.
  await rm(incoming, { recursive: true, force: true });
  await mkdir(incoming, { recursive: true });
  for (const bucket of options.buckets) await mkdir(join(options.directory, bucket), { recursive: true });

  const endpoint = new EndpointHandler(options, incoming);
  const server = createServer((req, res) => endpoint.serve(req, res));
  options.configureServer?.(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      // SDK clients keep sockets alive; without this, close() waits for them to time out.
      server.closeAllConnections();
    }));
  return {
    url: endpointUrl(options.host, port),
    host: options.host,
    port,
    credentials: options.credentials,
    buckets: [...options.buckets],
    close,
    [Symbol.asyncDispose]: close,
  };
}

class EndpointHandler {
  readonly #options: S3EndpointOptions;
  readonly #incoming: string;
  readonly #buckets: Set<string>;
  readonly #s3rver: S3rver;
  readonly #serveRead: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  readonly #writes = new SerialQueue();
  readonly #now: () => number;

  constructor(options: S3EndpointOptions, incoming: string) {
    this.#options = options;
    this.#incoming = incoming;
    this.#buckets = new Set(options.buckets);
    this.#now = options.now ?? Date.now;
    this.#s3rver = new S3rver({ directory: options.directory, silent: true, vhostBuckets: false });
    this.#serveRead = this.#s3rver.callback();
  }

  serve(req: IncomingMessage, res: ServerResponse): void {
    let target: RequestTarget | undefined;
    const work = async () => {
      target = parseRequestTarget(req.url ?? '');
      const operation = this.#authorize(req, target);
      await this.#perform(req, res, operation.operation, operation.payloadHash);
    };
    work().catch((err: unknown) => this.#fail(res, err, resourceOf(target)));
  }

  #authorize(req: IncomingMessage, target: RequestTarget): { operation: S3Operation; payloadHash: string } {
    const method = req.method ?? 'GET';
    const signature = verifySignature({ method, rawHeaders: req.rawHeaders, target }, this.#options.credentials, this.#now());
    if (!signature) {
      // Refused before anything else is looked at, so an anonymous caller learns nothing.
      const objectRead = (method === 'GET' || method === 'HEAD') && target.bucket !== undefined && target.key !== undefined;
      if (!this.#options.publicRead) throw new S3Failure(403, 'AccessDenied', 'this endpoint accepts only requests signed (AWS Signature Version 4) with its access key');
      if (!objectRead) throw new S3Failure(403, 'AccessDenied', "unsigned requests may only GET or HEAD an object here; sign every other request (AWS Signature Version 4) with the endpoint's access key");
      if (this.#options.publicReadHost !== undefined && !this.#options.publicReadHost(req.headers.host)) {
        throw new S3Failure(403, 'AccessDenied', 'unsigned reads are answered only under a Host this endpoint is reached by (an IP address, localhost, the node\'s --host or advertised name, or auditlake.http.allowed.hosts); a web page may be reaching it through DNS rebinding — sign the request, or add the name to auditlake.http.allowed.hosts');
      }
    }
    const operation = classifyOperation(method, target, req.headers, signature?.signatureParams ?? new Set());
    if (operation.bucket !== undefined && !this.#buckets.has(operation.bucket)) {
      throw new S3Failure(404, 'NoSuchBucket', `the bucket does not exist here; this endpoint serves ${[...this.#buckets].join(', ')}`);
    }
    if (operation.key !== undefined) {
      const problem = objectKeyProblem(operation.key);
      if (problem) throw new S3Failure(400, 'InvalidArgument', `${problem}; this endpoint refuses such keys`);
    }
    return { operation, payloadHash: signature?.payloadHash ?? UNSIGNED_PAYLOAD };
  }

  async #perform(req: IncomingMessage, res: ServerResponse, operation: S3Operation, payloadHash: string): Promise<void> {
    if (operation.name !== 'PutObject' && operation.name !== 'DeleteObjects') {
      if (hasBody(req)) throw new S3Failure(400, 'UnexpectedContent', `${operation.name} takes no request body`);
      if (payloadHash !== UNSIGNED_PAYLOAD && payloadHash !== EMPTY_PAYLOAD_SHA256) throw new S3Failure(400, 'XAmzContentSHA256Mismatch', 'the signed x-amz-content-sha256 is not that of an empty body');
    }
    const bucket = operation.bucket!;
    switch (operation.name) {
      case 'ListBuckets':
        return this.#listBuckets(res);
      case 'HeadBucket':
        res.writeHead(200, { 'x-amz-bucket-region': 'us-east-1' }).end();
        return;
      case 'ListObjects':
      case 'ListObjectsV2':
        return this.#listObjects(res, operation);
      case 'DeleteObjects':
        return this.#deleteObjects(req, res, bucket, payloadHash);
      case 'PutObject':
        return this.#putObject(req, res, bucket, operation.key!, payloadHash);
      case 'DeleteObject':
        await this.#writes.run(() => removeObject(this.#options.directory, bucket, operation.key!));
        res.writeHead(204).end();
        return;
      case 'GetObject':
      case 'HeadObject':
      case 'GetBucketLocation':
        return this.#forwardRead(req, res, operation);
    }
  }

  /** Hands a checked read to s3rver, rewritten to exactly what was checked. */
  async #forwardRead(req: IncomingMessage, res: ServerResponse, operation: S3Operation): Promise<void> {
    const path = `/${uriEncode(operation.bucket!)}${operation.key === undefined ? '' : `/${encodePath(operation.key)}`}`;
    const query = [...operation.params].map(([name, value]) => (value === '' ? uriEncode(name) : `${uriEncode(name)}=${uriEncode(value)}`)).join('&');
    req.url = query === '' ? path : `${path}?${query}`;
    // s3rver reads a bucket from a Host like `<bucket>.s3.amazonaws.com`; it must see only the path.
    req.headers.host = '127.0.0.1';
    delete req.headers.authorization;
    await this.#serveRead(req, res);
  }

  async #putObject(req: IncomingMessage, res: ServerResponse, bucket: string, key: string, payloadHash: string): Promise<void> {
    const ifNoneMatch = req.headers['if-none-match'];
    if (req.headers['if-match'] !== undefined) throw new S3Failure(501, 'NotImplemented', 'If-Match on PUT is not supported here');
    if (ifNoneMatch !== undefined && ifNoneMatch !== '*') throw new S3Failure(501, 'NotImplemented', 'PUT supports only If-None-Match: *');
    const staged = await stageBody(req, this.#incoming, payloadHash, this.#options.objectBytesMax ?? OBJECT_BYTES_MAX);
    try {
      await this.#writes.run(async () => {
        if (ifNoneMatch === '*' && (await objectExists(this.#options.directory, bucket, key))) {
          throw new S3Failure(412, 'PreconditionFailed', 'the object already exists (If-None-Match: *)');
        }
        await placeObject(this.#options.directory, bucket, key, staged.path, staged.md5Hex, storedMetadata(req.headers));
      });
    } finally {
      await staged.discard();
    }
    res.writeHead(200, { etag: `"${staged.md5Hex}"`, 'content-length': 0 }).end();
  }

  async #deleteObjects(req: IncomingMessage, res: ServerResponse, bucket: string, payloadHash: string): Promise<void> {
    const body = (await readSmallBody(req, payloadHash, DELETE_BODY_BYTES_MAX)).toString('utf8');
    const malformed = (why: string) => new S3Failure(400, 'MalformedXML', `the DeleteObjects body is not a Delete document: ${why}`);
    if (!/<Delete[\s>]/.test(body)) throw malformed('no <Delete> element');
    const keys: string[] = [];
    for (const [, inner] of body.matchAll(/<Object>([\s\S]*?)<\/Object>/g)) {
      if (/<VersionId>/.test(inner!)) throw new S3Failure(501, 'NotImplemented', 'versioned deletes are not supported here');
      const raw = /^\s*<Key>([\s\S]*?)<\/Key>\s*$/.exec(inner!)?.[1];
      const key = raw === undefined ? undefined : xmlDecode(raw);
      if (key === undefined) throw malformed('an <Object> without a single well-formed <Key>');
      const problem = objectKeyProblem(key);
      if (problem) throw new S3Failure(400, 'InvalidArgument', `${problem}; this endpoint refuses such keys (nothing was deleted)`);
      keys.push(key);
    }
    if (keys.length === 0 || keys.length > DELETE_KEYS_MAX) throw malformed(`it must name 1 to ${DELETE_KEYS_MAX} objects`);
    const quiet = /<Quiet>\s*true\s*<\/Quiet>/.test(body);
    await this.#writes.run(async () => {
      for (const key of keys) await removeObject(this.#options.directory, bucket, key);
    });
    const deleted = quiet ? '' : keys.map((key) => `<Deleted><Key>${xmlText(key)}</Key></Deleted>`).join('');
    sendXml(res, 200, `${XML_HEADER}<DeleteResult xmlns="${S3_NAMESPACE}">${deleted}</DeleteResult>`);
  }

  async #listBuckets(res: ServerResponse): Promise<void> {
    const buckets: string[] = [];
    for (const name of this.#buckets) {
      const created = await stat(join(this.#options.directory, name));
      buckets.push(`<Bucket><Name>${xmlText(name)}</Name><CreationDate>${created.birthtime.toISOString()}</CreationDate></Bucket>`);
    }
    sendXml(res, 200, `${XML_HEADER}<ListAllMyBucketsResult xmlns="${S3_NAMESPACE}"><Owner><ID>auditlake</ID><DisplayName>auditlake</DisplayName></Owner><Buckets>${buckets.join('')}</Buckets></ListAllMyBucketsResult>`);
  }

  async #listObjects(res: ServerResponse, operation: S3Operation): Promise<void> {
    const params = operation.params;
    const v2 = operation.name === 'ListObjectsV2';
    const bucket = operation.bucket!;
    const prefix = params.get('prefix') ?? '';
    const delimiter = params.get('delimiter') ?? '';
    const maxKeys = parseMaxKeys(params.get('max-keys'));
    const urlEncoded = params.get('encoding-type') === 'url';
    if (params.has('encoding-type') && !urlEncoded) throw new S3Failure(400, 'InvalidArgument', 'encoding-type must be url');
    let resume: ListingEntry | undefined;
    const token = params.get('continuation-token');
    if (v2 && token !== undefined) {
      resume = parseContinuationToken(token);
      if (!resume) throw new S3Failure(400, 'InvalidArgument', 'the continuation token was not issued by this endpoint');
    }
    const startAfter = resume ? (resume.kind === 'key' ? resume.key : resume.prefix) : ((v2 ? params.get('start-after') : params.get('marker')) ?? '');
    const page =
      maxKeys === 0
        ? { entries: [], resumeAfter: undefined }
        : await listBucketPage(join(this.#options.directory, bucket), {
            prefix,
            delimiter,
            startAfter,
            maxKeys,
            ...(resume?.kind === 'prefix' ? { skipPrefix: resume.prefix } : {}),
          });
    const text = (value: string) => xmlText(urlEncoded ? encodePath(value) : value);
    const contents: string[] = [];
    const commonPrefixes: string[] = [];
    for (const entry of page.entries) {
      if (entry.kind === 'prefix') {
        commonPrefixes.push(`<CommonPrefixes><Prefix>${text(entry.prefix)}</Prefix></CommonPrefixes>`);
        continue;
      }
      let metadata;
      try {
        metadata = await this.#s3rver.store.getMetadata(bucket, entry.key);
      } catch (err) {
        // Deleted since the directory was read: not part of this listing.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      const lastModified = new Date(String(metadata['last-modified'])).toISOString();
      contents.push(
        `<Contents><Key>${text(entry.key)}</Key><LastModified>${lastModified}</LastModified><ETag>${xmlText(String(metadata['etag']))}</ETag>` +
          `<Size>${Number(metadata['content-length'])}</Size><StorageClass>STANDARD</StorageClass></Contents>`,
      );
    }
    const truncated = page.resumeAfter !== undefined;
    const parts = [`<Name>${xmlText(bucket)}</Name>`, `<Prefix>${text(prefix)}</Prefix>`];
    if (v2) {
      parts.push(`<KeyCount>${contents.length + commonPrefixes.length}</KeyCount>`);
      if (token !== undefined) parts.push(`<ContinuationToken>${xmlText(token)}</ContinuationToken>`);
      if (page.resumeAfter) parts.push(`<NextContinuationToken>${continuationToken(page.resumeAfter)}</NextContinuationToken>`);
      if (params.has('start-after')) parts.push(`<StartAfter>${text(params.get('start-after')!)}</StartAfter>`);
    } else {
      parts.push(`<Marker>${text(startAfter)}</Marker>`);
      if (page.resumeAfter) parts.push(`<NextMarker>${text(page.resumeAfter.kind === 'key' ? page.resumeAfter.key : page.resumeAfter.prefix)}</NextMarker>`);
    }
    parts.push(`<MaxKeys>${maxKeys}</MaxKeys>`);
    if (delimiter !== '') parts.push(`<Delimiter>${text(delimiter)}</Delimiter>`);
    if (urlEncoded) parts.push('<EncodingType>url</EncodingType>');
    parts.push(`<IsTruncated>${truncated}</IsTruncated>`);
    sendXml(res, 200, `${XML_HEADER}<ListBucketResult xmlns="${S3_NAMESPACE}">${parts.join('')}${contents.join('')}${commonPrefixes.join('')}</ListBucketResult>`);
  }

  #fail(res: ServerResponse, err: unknown, resource: string): void {
    const failure = err instanceof S3Failure ? err : new S3Failure(500, 'InternalError', 'the endpoint failed to serve this request; see the node log');
    if (!(err instanceof S3Failure)) this.#options.onInternalError?.(err);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    // A refused request's unread body is not worth reading: close the connection after the answer.
    if (!res.req.complete) res.setHeader('connection', 'close');
    sendXml(res, failure.status, errorXml(failure, resource));
  }
}
