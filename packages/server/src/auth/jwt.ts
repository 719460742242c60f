import { createHmac, timingSafeEqual } from 'node:crypto';

export interface JwtClaims {
  sub: string;
  role: string;
}

export type JwtResult = { ok: true; claims: JwtClaims } | { ok: false; reason: string };

/** Clocks of the issuer and this node may differ by this much either way. */
export const JWT_CLOCK_SKEW_SEC = 60;

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A NumericDate claim (RFC 7519 §2: seconds, a JSON number), or why it is not one. */
function numericDate(payload: Record<string, unknown>, claim: string): { ok: true; value: number | undefined } | { ok: false; reason: string } {
  const value = payload[claim];
  if (value === undefined) return { ok: true, value: undefined };
  if (typeof value !== 'number' || !Number.isFinite(value)) return { ok: false, reason: `JWT ${claim} claim must be a number (seconds since the epoch), got ${value === null ? 'null' : typeof value}` };
  return { ok: true, value };
}

/** Claims a node requires to hold given values (configured; an absent one is not checked). */
export interface JwtExpectations {
  /** `iss` must equal it. */
  issuer?: string;
  /** `aud` (a string, or an array of strings) must name it. */
  audience?: string;
}

/**
 * Verifies an HS256 JWT (RFC 7519) and returns its `sub` and `role` claims. Only HS256 is
 * accepted: honouring the token's own `alg` (e.g. `none`) is the classic JWT forgery. `exp`
 * is required (a token that never expires is a password that cannot be rotated), and `exp`,
 * `nbf` and `iat` must be numbers; each is checked with JWT_CLOCK_SKEW_SEC of leeway. With
 * `claimed`, `iss` and `aud` must hold what it names: a secret shared by several services
 * otherwise lets a token minted for one of them in here.
 */
export function verifyHs256(token: string, secret: string, nowMs: number, claimed: JwtExpectations = {}): JwtResult {
  const parts = token.split('.');
  if (parts.length !== 3) return { ok: false, reason: 'malformed JWT (it must be three base64url parts separated by dots)' };
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const header = decodeJson(headerPart);
  if (!header) return { ok: false, reason: 'malformed JWT header' };
  if (header['alg'] !== 'HS256') return { ok: false, reason: 'JWT alg must be HS256' };
  const expected = createHmac('sha256', secret).update(`${headerPart}.${payloadPart}`).digest();
  // Compared as the exact unpadded base64url text of the MAC (RFC 7515 §2): decoded leniently,
  // one signed token passed under many spellings (padded, junk characters skipped, the `+/`
  // alphabet, the last character's spare bits flipped: review), which tells apart nothing that
  // a log or a deny list keyed by the token text would expect to be one token.
  const presented = Buffer.from(signaturePart, 'utf8');
  const wanted = Buffer.from(expected.toString('base64url'), 'utf8');
  if (presented.length !== wanted.length || !timingSafeEqual(presented, wanted)) {
    return { ok: false, reason: 'JWT signature does not verify' };
  }
  const payload = decodeJson(payloadPart);
  if (!payload) return { ok: false, reason: 'malformed JWT payload' };
  const sub = typeof payload['sub'] === 'string' && payload['sub'] !== '' ? payload['sub'] : undefined;
  const refuse = (reason: string): JwtResult => ({ ok: false, reason });
  const nowSec = nowMs / 1000;
  const exp = numericDate(payload, 'exp');
  if (!exp.ok) return refuse(exp.reason);
  if (exp.value === undefined) return refuse('JWT has no exp claim (an expiry time is required)');
  if (nowSec >= exp.value + JWT_CLOCK_SKEW_SEC) return refuse('JWT expired');
  const nbf = numericDate(payload, 'nbf');
  if (!nbf.ok) return refuse(nbf.reason);
  if (nbf.value !== undefined && nowSec < nbf.value - JWT_CLOCK_SKEW_SEC) return refuse('JWT not yet valid (nbf is in the future)');
  const iat = numericDate(payload, 'iat');
  if (!iat.ok) return refuse(iat.reason);
  if (iat.value !== undefined && nowSec < iat.value - JWT_CLOCK_SKEW_SEC) return refuse('JWT issued in the future (iat is ahead of this node\'s clock)');
  if (claimed.issuer !== undefined && payload['iss'] !== claimed.issuer) {
    return refuse(payload['iss'] === undefined ? 'JWT has no iss claim (auditlake.auth.jwt.issuer requires one)' : 'JWT iss claim is not the issuer auditlake.auth.jwt.issuer names');
  }
  if (claimed.audience !== undefined && !namesAudience(payload['aud'], claimed.audience)) {
    return refuse(payload['aud'] === undefined ? 'JWT has no aud claim (auditlake.auth.jwt.audience requires one)' : 'JWT aud claim does not name the audience auditlake.auth.jwt.audience names');
  }
  const { role } = payload;
  if (sub === undefined) return refuse('JWT has no sub claim');
  if (typeof role !== 'string') return refuse('JWT has no role claim');
  return { ok: true, claims: { sub, role } };
}

/** Whether an `aud` claim (RFC 7519 §4.1.3: a string or an array of strings) names `audience`. */
function namesAudience(aud: unknown, audience: string): boolean {
  return aud === audience || (Array.isArray(aud) && aud.includes(audience));
}

/** Signs claims as an HS256 JWT; used by tests and the CLI to mint tokens. */
export function signHs256(claims: Record<string, unknown>, secret: string): string {
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const signature = createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url');
  return `${header}.${payload}.${signature}`;
}
