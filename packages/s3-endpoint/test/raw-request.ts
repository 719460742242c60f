// Requests sent byte for byte as written (fetch would normalise `..` in a path), signed or not.
import { createHash, createHmac } from 'node:crypto';
import { request } from 'node:http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { S3Credentials } from '../src/index.js';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Sends `method path` to the endpoint exactly as given (no URL normalisation). */
export function rawRequest(endpointUrl: string, method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<RawResponse> {
  const url = new URL(endpointUrl);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, headers: { ...headers, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

type Bytes = string | Uint8Array | ArrayBuffer | ArrayBufferView;

function toBuffer(data: Bytes): Buffer | string {
  return typeof data === 'string' ? data : ArrayBuffer.isView(data) ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.from(data);
}

/** SHA-256 / HMAC-SHA-256 for the AWS signer. */
class Sha256 {
  readonly #hash;
  constructor(secret?: Bytes) {
    this.#hash = secret === undefined ? createHash('sha256') : createHmac('sha256', toBuffer(secret));
  }
  update(data: Bytes): void {
    this.#hash.update(toBuffer(data));
  }
  async digest(): Promise<Uint8Array> {
    return this.#hash.digest();
  }
  reset(): void {}
}

export function sha256Hex(body: string | Buffer): string {
  return createHash('sha256').update(body).digest('hex');
}

/** A SigV4 signer (the AWS SDK's) for requests the SDK would never send as they are. */
export function signer(credentials: S3Credentials): SignatureV4 {
  return new SignatureV4({ service: 's3', region: 'us-east-1', credentials, sha256: Sha256, uriEscapePath: false });
}

/**
 * Signs `method path` (sent as written; the path is what is signed) with the payload hash
 * given, and returns the headers to send.
 */
export async function signedHeaders(endpointUrl: string, credentials: S3Credentials, method: string, path: string, payloadHash: string, extra: Record<string, string> = {}, signingDate?: Date): Promise<Record<string, string>> {
  const url = new URL(endpointUrl);
  const [pathname, search] = path.split('?') as [string, string | undefined];
  const query: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(search ?? '')) query[name] = value;
  // A correct client signs the canonical path (each segment decoded, then encoded per RFC 3986), whatever it sends.
  const canonical = pathname
    .split('/')
    .map((s) => encodeURIComponent(decodeURIComponent(s)).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');
  const signed = await signer(credentials).sign(
    { method, protocol: 'http:', hostname: url.hostname, port: Number(url.port), path: canonical, query, headers: { host: url.host, 'x-amz-content-sha256': payloadHash, ...extra } },
    signingDate ? { signingDate } : {},
  );
  return signed.headers;
}
