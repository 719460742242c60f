import { createHmac, timingSafeEqual } from 'node:crypto';

export interface JwtClaims {
  sub: string;
  role: string;
}

export type JwtResult = { ok: true; claims: JwtClaims } | { ok: false; reason: string };

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Verifies an HS256 JWT (RFC 7519) and returns its `sub` and `role` claims. Only HS256 is
 * accepted: honouring the token's own `alg` (e.g. `none`) is the classic JWT forgery.
 */
export function verifyHs256(token: string, secret: string, nowMs: number): JwtResult {
  const parts = token.split('.');
  if (parts.length !== 3) return { ok: false, reason: 'malformed JWT' };
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const header = decodeJson(headerPart);
  if (header?.['alg'] !== 'HS256') return { ok: false, reason: 'JWT alg must be HS256' };
  const expected = createHmac('sha256', secret).update(`${headerPart}.${payloadPart}`).digest();
  const presented = Buffer.from(signaturePart, 'base64url');
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
    return { ok: false, reason: 'JWT signature does not verify' };
  }
  const payload = decodeJson(payloadPart);
  if (!payload) return { ok: false, reason: 'malformed JWT payload' };
  const nowSec = nowMs / 1000;
  if (typeof payload['exp'] === 'number' && nowSec >= payload['exp']) return { ok: false, reason: 'JWT expired' };
  if (typeof payload['nbf'] === 'number' && nowSec < payload['nbf']) return { ok: false, reason: 'JWT not yet valid' };
  const { sub, role } = payload;
  if (typeof sub !== 'string' || sub === '') return { ok: false, reason: 'JWT has no sub claim' };
  if (typeof role !== 'string') return { ok: false, reason: 'JWT has no role claim' };
  return { ok: true, claims: { sub, role } };
}

/** Signs claims as an HS256 JWT; used by tests and the CLI to mint tokens. */
export function signHs256(claims: Record<string, unknown>, secret: string): string {
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const signature = createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url');
  return `${header}.${payload}.${signature}`;
}
