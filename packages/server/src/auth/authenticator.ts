import type { CredentialConfig, Role } from '@auditlake/model';
import { digest, matchesDigest } from './constant-time.js';
import { verifyHs256 } from './jwt.js';

export interface Principal {
  name: string;
  role: Role;
  /** How the caller authenticated: `token`, `jwt` or `accessKey`. */
  via: 'token' | 'jwt' | 'accessKey';
}

export type AuthResult = { ok: true; principal: Principal } | { ok: false; reason: string };

interface StoredCredential {
  name: string;
  role: Role;
  secretDigest: Buffer;
}

export interface AuthenticatorOptions {
  tokens: readonly CredentialConfig[];
  accessKeys: readonly CredentialConfig[];
  jwtSecret: string;
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
  readonly #now: () => number;
  /** Compared against when an access key id is unknown, so the reply takes the same time. */
  readonly #decoy = digest('auditlake-decoy-secret');

  constructor(options: AuthenticatorOptions) {
    const store = (c: CredentialConfig): StoredCredential => ({ name: c.name, role: c.role, secretDigest: digest(c.secret) });
    this.#tokens = options.tokens.map(store);
    this.#accessKeys = new Map(options.accessKeys.map((c) => [c.name, store(c)]));
    this.#jwtSecret = options.jwtSecret;
    this.#now = options.now ?? Date.now;
  }

  authenticate(header: string | undefined): AuthResult {
    if (header === undefined || header.trim() === '') return { ok: false, reason: 'no credentials (Authorization header missing)' };
    const space = header.indexOf(' ');
    const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
    const credential = space < 0 ? '' : header.slice(space + 1).trim();
    if (credential === '') return { ok: false, reason: `empty ${scheme} credential` };
    switch (scheme) {
      case 'token':
        return this.#byToken(credential);
      case 'bearer':
        return this.#byJwt(credential);
      case 'accesskey':
        return this.#byAccessKey(credential);
      default:
        return { ok: false, reason: 'unsupported Authorization scheme (use Token, Bearer or AccessKey)' };
    }
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
    const result = verifyHs256(jwt, this.#jwtSecret, this.#now());
    if (!result.ok) return result;
    if (!isRole(result.claims.role)) return { ok: false, reason: `JWT role must be admin or ingest: ${result.claims.role}` };
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
