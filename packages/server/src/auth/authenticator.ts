import { createHmac, randomBytes } from 'node:crypto';
import type { CredentialConfig, Role } from '@auditlake/model';
import { digest, matchesDigest } from './constant-time.js';
import { verifyHs256, type JwtExpectations } from './jwt.js';

export interface Principal {
  name: string;
  role: Role;
  /** How the caller authenticated: `token`, `jwt` or `accessKey`. */
  via: 'token' | 'jwt' | 'accessKey';
}

type SchemeName = 'Token' | 'Bearer' | 'AccessKey';
/** The schemes this node reads, by their lower-case name; any other word is never repeated back. */
const SCHEMES: ReadonlyMap<string, SchemeName> = new Map([
  ['token', 'Token'],
  ['bearer', 'Bearer'],
  ['accesskey', 'AccessKey'],
]);

/**
 * Why a request was refused, safe to show and to store: `reason` never holds any part of the
 * presented credential, `scheme` is one of the known names (or absent), and `fingerprint` is
 * a short keyed hash of the credential, enough to tell whether two refusals presented the same
 * one and useless for recovering it.
 */
export interface AuthRefusal {
  ok: false;
  reason: string;
  scheme?: SchemeName;
  fingerprint?: string;
}

export type AuthResult = { ok: true; principal: Principal } | AuthRefusal;

interface StoredCredential {
  name: string;
  role: Role;
  secretDigest: Buffer;
}

export interface AuthenticatorOptions {
  tokens: readonly CredentialConfig[];
  accessKeys: readonly CredentialConfig[];
  jwtSecret: string;
  /** `auditlake.auth.jwt.issuer` / `.audience`: empty or absent, not checked. */
  jwtIssuer?: string;
  jwtAudience?: string;
  now?: () => number;
}

function isRole(value: string): value is Role {
  return value === 'admin' || value === 'ingest';
}

/**
 * Checks `Authorization` headers: `Token <token>`, `Bearer <HS256 JWT>` or
 * `AccessKey <id>:<secret>`. Secrets are kept only as digests and compared in constant time;
 * every stored token is compared, so timing does not reveal which one (if any) matched.
 */
export class Authenticator {
  readonly #tokens: StoredCredential[];
  readonly #accessKeys: Map<string, StoredCredential>;
  readonly #jwtSecret: string;
  readonly #jwtExpected: JwtExpectations;
  /** Names of the configured tokens and access keys, which no JWT `sub` may take (#byJwt). */
  readonly #credentialNames: ReadonlySet<string>;
  readonly #now: () => number;
  /** Compared against when an access key id is unknown, so the reply takes the same time. */
  readonly #decoy = digest('auditlake-decoy-secret');
  /**
   * Keys the fingerprints of refused credentials: random per process, so a fingerprint cannot
   * be checked against guessed tokens offline; within one node's run equal credentials share one.
   */
  readonly #fingerprintKey = randomBytes(32);

  constructor(options: AuthenticatorOptions) {
    const store = (c: CredentialConfig): StoredCredential => ({ name: c.name, role: c.role, secretDigest: digest(c.secret) });
    this.#tokens = options.tokens.map(store);
    this.#accessKeys = new Map(options.accessKeys.map((c) => [c.name, store(c)]));
    this.#credentialNames = new Set([...options.tokens, ...options.accessKeys].map((c) => c.name));
    this.#jwtSecret = options.jwtSecret;
    this.#jwtExpected = {
      ...(options.jwtIssuer !== undefined && options.jwtIssuer !== '' ? { issuer: options.jwtIssuer } : {}),
      ...(options.jwtAudience !== undefined && options.jwtAudience !== '' ? { audience: options.jwtAudience } : {}),
    };
    this.#now = options.now ?? Date.now;
  }

  /**
   * Checks an `Authorization` header. A refusal's reason never repeats any part of the header:
   * a bare token (no scheme) or one after a tab would otherwise come back in the 401 body and be
   * stored in the DENY event.
   */
  authenticate(header: string | undefined): AuthResult {
    if (header === undefined || header.trim() === '') return { ok: false, reason: 'no credentials (Authorization header missing)' };
    const trimmed = header.trim();
    const separator = /\s/.exec(trimmed);
    const word = separator ? trimmed.slice(0, separator.index) : trimmed;
    const credential = separator ? trimmed.slice(separator.index).trim() : '';
    const scheme = SCHEMES.get(word.toLowerCase());
    if (scheme === undefined) {
      return { ok: false, reason: 'unsupported Authorization scheme (use Token, Bearer or AccessKey)', fingerprint: this.#fingerprint(trimmed) };
    }
    if (credential === '') return { ok: false, reason: `empty ${scheme} credential`, scheme };
    const result = scheme === 'Token' ? this.#byToken(credential) : scheme === 'Bearer' ? this.#byJwt(credential) : this.#byAccessKey(credential);
    return result.ok ? result : { ...result, scheme, fingerprint: this.#fingerprint(credential) };
  }

  /** 8 hex digits of a keyed SHA-256: tells refusals of one credential apart from another's, reveals nothing. */
  #fingerprint(credential: string): string {
    return createHmac('sha256', this.#fingerprintKey).update(credential, 'utf8').digest('hex').slice(0, 8);
  }

  #byToken(token: string): AuthResult {
    let match: StoredCredential | undefined;
    for (const candidate of this.#tokens) {
      if (matchesDigest(token, candidate.secretDigest) && match === undefined) match = candidate;
    }
    if (!match) return { ok: false, reason: 'unknown token' };
    return { ok: true, principal: { name: match.name, role: match.role, via: 'token' } };
  }

  #byJwt(jwt: string): AuthResult {
    if (this.#jwtSecret === '') return { ok: false, reason: 'Bearer tokens are not enabled (auditlake.auth.jwt.secret is not set)' };
    const result = verifyHs256(jwt, this.#jwtSecret, this.#now(), this.#jwtExpected);
    if (!result.ok) return result;
    if (!isRole(result.claims.role)) return { ok: false, reason: `JWT role must be admin or ingest: ${result.claims.role}` };
    // A JWT's sub and a token's or access key's name are one namespace: every audit record
    // names the principal by it, and source bindings (auditlake.ingest.sources.<principal>) are
    // keyed by it. An identity provider user whose sub is such a name (`admin`, `trino-prod`)
    // would send as that credential's bound sources and be recorded as it.
    if (this.#credentialNames.has(result.claims.sub)) {
      return { ok: false, reason: `JWT sub ${JSON.stringify(result.claims.sub)} is the name of a configured token or access key: a JWT may not act as that principal` };
    }
    return { ok: true, principal: { name: result.claims.sub, role: result.claims.role, via: 'jwt' } };
  }

  #byAccessKey(credential: string): AuthResult {
    const colon = credential.indexOf(':');
    if (colon <= 0) return { ok: false, reason: 'AccessKey credential must be <id>:<secret>' };
    const id = credential.slice(0, colon);
    const stored = this.#accessKeys.get(id);
    const matches = matchesDigest(credential.slice(colon + 1), stored?.secretDigest ?? this.#decoy);
    if (!stored || !matches) return { ok: false, reason: 'unknown access key or wrong secret' };
    return { ok: true, principal: { name: stored.name, role: stored.role, via: 'accessKey' } };
  }
}

/** Which roles may do what. `admin` may do everything `ingest` may. */
export function roleAllows(role: Role, required: Role): boolean {
  return role === 'admin' || required === 'ingest';
}
