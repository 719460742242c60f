import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { uriEncode } from './request-target.js';
import type { S3Credentials } from './request-signature.js';

/** SHA-256 (or HMAC-SHA-256 with a secret) in the shape the AWS signer asks for. */
class NodeSha256 {
  readonly #hash: Hash | Hmac;

  constructor(secret?: string | Uint8Array | ArrayBuffer | ArrayBufferView) {
    if (secret === undefined) {
      this.#hash = createHash('sha256');
    } else {
      const key = typeof secret === 'string' ? secret : ArrayBuffer.isView(secret) ? Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength) : Buffer.from(secret);
      this.#hash = createHmac('sha256', key);
    }
  }

  update(data: string | Uint8Array | ArrayBuffer | ArrayBufferView): void {
    this.#hash.update(typeof data === 'string' ? data : ArrayBuffer.isView(data) ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.from(data));
  }

  async digest(): Promise<Uint8Array> {
    return this.#hash.digest();
  }

  reset(): void {
    throw new Error('not used by the signer');
  }
}

export interface SignedFetchOptions {
  credentials: S3Credentials;
  region?: string;
  /** The fetch that sends the signed request; default the global one. */
  fetch?: typeof fetch;
}

/**
 * A `fetch` that signs every request with AWS Signature Version 4 (the AWS SDK's own signer),
 * for readers that speak plain HTTP to S3 but cannot sign, such as icebird. Requests must be
 * GET or HEAD with no body; the path is sent in SigV4's canonical percent-encoding, so what is
 * signed is exactly what is sent.
 */
export function signedFetch(options: SignedFetchOptions): typeof fetch {
  const signer = new SignatureV4({ service: 's3', region: options.region ?? 'us-east-1', credentials: options.credentials, sha256: NodeSha256, uriEscapePath: false });
  const send = options.fetch ?? globalThis.fetch;
  return async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    if (request.method !== 'GET' && request.method !== 'HEAD') throw new TypeError(`signedFetch sends only GET and HEAD, not ${request.method}`);
    const url = new URL(request.url);
    const path = url.pathname
      .split('/')
      .map((segment) => uriEncode(decodeURIComponent(segment)))
      .join('/');
    const query: Record<string, string> = {};
    for (const [name, value] of url.searchParams) query[name] = value;
    const headers: Record<string, string> = { host: url.host, 'x-amz-content-sha256': createHash('sha256').digest('hex') };
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const signed = await signer.sign({ method: request.method, protocol: url.protocol, hostname: url.hostname, ...(url.port === '' ? {} : { port: Number(url.port) }), path, query, headers });
    const search = Object.entries(signed.query ?? {})
      .map(([name, value]) => `${uriEncode(name)}=${uriEncode(String(value))}`)
      .join('&');
    const sentHeaders = new Headers();
    for (const [name, value] of Object.entries(signed.headers)) if (name !== 'host') sentHeaders.set(name, value);
    return send(`${url.protocol}//${url.host}${path}${search === '' ? '' : `?${search}`}`, { method: request.method, headers: sentHeaders, signal: request.signal });
  };
}
