import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { RequestTarget } from './request-target.js';
import { uriEncode } from './request-target.js';
import { S3Failure } from './s3-failure.js';

/** The key pair requests must be signed with. */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** How far a signed request's `x-amz-date` may be from this endpoint's clock (S3's own rule). */
export const SIGNATURE_SKEW_MS_MAX = 15 * 60 * 1000;
/** The longest validity a presigned URL may ask for (S3's own limit: 7 days). */
export const PRESIGNED_EXPIRES_S_MAX = 604_800;
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
export const EMPTY_PAYLOAD_SHA256 = createHash('sha256').digest('hex');
const ALGORITHM = 'AWS4-HMAC-SHA256';

/** The parts of a request the signature covers. */
export interface SignedRequestParts {
  method: string;
  /** `IncomingMessage.rawHeaders`: names and values alternating, as sent. */
  rawHeaders: readonly string[];
  target: RequestTarget;
}

/** A verified signature: what the client declared its body hashes to (hex or UNSIGNED-PAYLOAD). */
export interface VerifiedSignature {
  payloadHash: string;
  /** Query parameters that carried the signature (presigned URLs), to drop before serving. */
  signatureParams: ReadonlySet<string>;
}

function denied(code: string, message: string, status = 403): S3Failure {
  return new S3Failure(status, code, message);
}

function headerValues(rawHeaders: readonly string[]): Map<string, string[]> {
  const values = new Map<string, string[]>();
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    const list = values.get(name) ?? [];
    list.push(rawHeaders[i + 1]!);
    values.set(name, list);
  }
  return values;
}

/** `yyyymmddThhmmssZ` → epoch ms, or NaN. */
function parseAmzDate(text: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  if (!m) return NaN;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, s);
}

interface SignatureClaim {
  accessKeyId: string;
  scopeDate: string;
  region: string;
  service: string;
  terminator: string;
  signedHeaders: string[];
  signature: string;
  amzDate: string;
}

function parseCredential(credential: string): Omit<SignatureClaim, 'signedHeaders' | 'signature' | 'amzDate'> {
  const parts = credential.split('/');
  if (parts.length !== 5) throw denied('AuthorizationHeaderMalformed', 'the Credential must be <access key id>/<yyyymmdd>/<region>/s3/aws4_request', 400);
  const [accessKeyId, scopeDate, region, service, terminator] = parts as [string, string, string, string, string];
  return { accessKeyId, scopeDate, region, service, terminator };
}

function parseSignedHeaders(list: string): string[] {
  const names = list.split(';');
  for (let i = 0; i < names.length; i += 1) {
    if (!/^[a-z0-9-]+$/.test(names[i]!) || (i > 0 && names[i - 1]! >= names[i]!)) {
      throw denied('AuthorizationHeaderMalformed', 'SignedHeaders must be lower-case header names, sorted, separated by ;', 400);
    }
  }
  return names;
}

function claimFromHeader(authorization: string, headers: Map<string, string[]>): SignatureClaim {
  if (!authorization.startsWith(`${ALGORITHM} `)) {
    throw denied('AccessDenied', `only Signature Version 4 (${ALGORITHM}) is accepted; sign requests with the endpoint's access key`);
  }
  const fields = new Map<string, string>();
  for (const part of authorization.slice(ALGORITHM.length + 1).split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const credential = fields.get('Credential');
  const signedHeaders = fields.get('SignedHeaders');
  const signature = fields.get('Signature');
  if (credential === undefined || signedHeaders === undefined || signature === undefined) {
    throw denied('AuthorizationHeaderMalformed', 'the Authorization header needs Credential, SignedHeaders and Signature', 400);
  }
  const amzDate = headers.get('x-amz-date');
  if (amzDate?.length !== 1) throw denied('AccessDenied', 'a signed request needs one x-amz-date header');
  return { ...parseCredential(credential), signedHeaders: parseSignedHeaders(signedHeaders), signature, amzDate: amzDate[0]! };
}

function claimFromQuery(query: Map<string, string>, nowMs: number): SignatureClaim {
  if (query.get('X-Amz-Algorithm') !== ALGORITHM) throw denied('AuthorizationQueryParametersError', `X-Amz-Algorithm must be ${ALGORITHM}`, 400);
  const credential = query.get('X-Amz-Credential');
  const amzDate = query.get('X-Amz-Date');
  const expires = query.get('X-Amz-Expires');
  const signedHeaders = query.get('X-Amz-SignedHeaders');
  const signature = query.get('X-Amz-Signature');
  if (credential === undefined || amzDate === undefined || expires === undefined || signedHeaders === undefined || signature === undefined) {
    throw denied('AuthorizationQueryParametersError', 'a presigned URL needs X-Amz-Credential, X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders and X-Amz-Signature', 400);
  }
  const expiresS = /^\d{1,7}$/.test(expires) ? Number(expires) : NaN;
  if (!(expiresS >= 1 && expiresS <= PRESIGNED_EXPIRES_S_MAX)) {
    throw denied('AuthorizationQueryParametersError', `X-Amz-Expires must be a whole number of seconds from 1 to ${PRESIGNED_EXPIRES_S_MAX}`, 400);
  }
  const signedAtMs = parseAmzDate(amzDate);
  if (Number.isFinite(signedAtMs) && nowMs > signedAtMs + expiresS * 1000) throw denied('AccessDenied', 'the presigned URL has expired');
  return { ...parseCredential(credential), signedHeaders: parseSignedHeaders(signedHeaders), signature, amzDate };
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function hmac(key: Buffer | string, text: string): Buffer {
  return createHmac('sha256', key).update(text, 'utf8').digest();
}

/** The path as SigV4 signs it for S3: each segment percent-decoded and encoded again, never normalised. */
function canonicalPath(rawPath: string): string {
  try {
    return rawPath
      .split('/')
      .map((segment) => uriEncode(decodeURIComponent(segment)))
      .join('/');
  } catch {
    throw new S3Failure(400, 'InvalidURI', 'the request path is not valid percent-encoded UTF-8');
  }
}

function canonicalQuery(query: ReadonlyArray<[string, string]>, exclude: string | undefined): string {
  return query
    .filter(([name]) => name !== exclude)
    .map(([name, value]) => [uriEncode(name), uriEncode(value)] as const)
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

function canonicalHeaderLines(signedHeaders: readonly string[], headers: Map<string, string[]>): string {
  return signedHeaders
    .map((name) => {
      const values = headers.get(name);
      if (values === undefined) throw denied('AccessDenied', `the signed header ${name} is missing from the request`);
      return `${name}:${values.map((v) => v.trim().replace(/\s+/g, ' ')).join(',')}\n`;
    })
    .join('');
}

/**
 * Checks a request's AWS Signature Version 4 (an `Authorization` header or a presigned URL)
 * against `credentials`, recomputing the canonical request from what was received. Returns
 * undefined for a request that carries no signature at all; throws an `S3Failure` (403, or 400
 * for a malformed one) for any signature that does not verify.
 */
export function verifySignature(request: SignedRequestParts, credentials: S3Credentials, nowMs: number): VerifiedSignature | undefined {
  const headers = headerValues(request.rawHeaders);
  const query = new Map(request.target.query);
  const authorization = headers.get('authorization');
  const presigned = query.has('X-Amz-Algorithm') || query.has('X-Amz-Signature');
  if (authorization === undefined && !presigned) return undefined;
  if (authorization !== undefined && presigned) throw denied('InvalidArgument', 'use either an Authorization header or a presigned URL, not both', 400);
  if (authorization !== undefined && authorization.length !== 1) throw denied('AccessDenied', 'a request may carry one Authorization header');

  const claim = authorization !== undefined ? claimFromHeader(authorization[0]!, headers) : claimFromQuery(query, nowMs);
  const signedAtMs = parseAmzDate(claim.amzDate);
  if (!Number.isFinite(signedAtMs)) throw denied('AccessDenied', 'x-amz-date must be yyyymmddThhmmssZ');
  if (Math.abs(nowMs - signedAtMs) > SIGNATURE_SKEW_MS_MAX && (!presigned || signedAtMs > nowMs)) {
    throw denied('RequestTimeTooSkewed', `the request was signed at ${claim.amzDate}, more than 15 minutes from this endpoint's clock`);
  }
  if (claim.scopeDate !== claim.amzDate.slice(0, 8)) throw denied('SignatureDoesNotMatch', "the credential scope's date is not the request's date");
  if (claim.service !== 's3' || claim.terminator !== 'aws4_request') throw denied('SignatureDoesNotMatch', 'the credential scope must end in /s3/aws4_request');
  // Access key ids are not secret, but compare digests anyway so nothing here depends on where they differ.
  const keyMatches = timingSafeEqual(createHash('sha256').update(claim.accessKeyId).digest(), createHash('sha256').update(credentials.accessKeyId).digest());
  if (!keyMatches) throw denied('InvalidAccessKeyId', 'the access key id is not this endpoint\'s');
  for (const required of presigned ? ['host'] : ['host', 'x-amz-content-sha256', 'x-amz-date']) {
    if (!claim.signedHeaders.includes(required)) throw denied('AccessDenied', `the signature must cover the ${required} header`);
  }

  let payloadHash: string;
  if (presigned) {
    payloadHash = query.get('X-Amz-Content-Sha256') ?? query.get('x-amz-content-sha256') ?? UNSIGNED_PAYLOAD;
  } else {
    const declared = headers.get('x-amz-content-sha256');
    if (declared?.length !== 1) throw denied('InvalidRequest', 'a signed request needs one x-amz-content-sha256 header', 400);
    payloadHash = declared[0]!;
  }
  if (payloadHash.startsWith('STREAMING-')) throw denied('NotImplemented', `payload signing ${payloadHash} is not supported here; send the body's SHA-256 or UNSIGNED-PAYLOAD`, 501);
  if (payloadHash !== UNSIGNED_PAYLOAD && !/^[0-9a-f]{64}$/.test(payloadHash)) {
    throw denied('InvalidArgument', 'x-amz-content-sha256 must be UNSIGNED-PAYLOAD or the lower-case hex SHA-256 of the body', 400);
  }

  const canonicalRequest = [
    request.method,
    canonicalPath(request.target.rawPath),
    canonicalQuery(request.target.query, presigned ? 'X-Amz-Signature' : undefined),
    canonicalHeaderLines(claim.signedHeaders, headers),
    claim.signedHeaders.join(';'),
    payloadHash,
  ].join('\n');
  const scope = `${claim.scopeDate}/${claim.region}/s3/aws4_request`;
  const stringToSign = `${ALGORITHM}\n${claim.amzDate}\n${scope}\n${sha256Hex(canonicalRequest)}`;
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, claim.scopeDate), claim.region), 's3'), 'aws4_request');
  const expected = hmac(signingKey, stringToSign);
  const presented = /^[0-9a-f]{64}$/.test(claim.signature) ? Buffer.from(claim.signature, 'hex') : Buffer.alloc(0);
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
    throw denied('SignatureDoesNotMatch', "the request signature does not match the one computed with this endpoint's secret key; check the key and the signing method");
  }
  const signatureParams = new Set(presigned ? [...query.keys()].filter((name) => /^x-amz-/i.test(name)) : []);
  return { payloadHash, signatureParams };
}
