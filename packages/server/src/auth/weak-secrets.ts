import type { CredentialConfig } from '@auditlake/model';

/**
 * Secrets shorter than this are warned about at start. Refused requests are answered 429 once a
 * client passes its threshold, but each guess is still checked (a client with valid credentials
 * is never limited, whatever its address did: one bad neighbour behind a NAT must not lock the
 * others out), so a node answers thousands of guesses a second: a short secret can be found by
 * trying. A generated admin token is 64 hex digits.
 */
export const SECRET_CHARS_MIN = 16;

/** One warning per configured secret too short to resist guessing, naming it (never its value). */
export function weakSecretWarnings(tokens: readonly CredentialConfig[], accessKeys: readonly CredentialConfig[], jwtSecret: string | undefined): string[] {
  const warnings: string[] = [];
  const advice = `use ${SECRET_CHARS_MIN * 2} or more random characters (e.g. openssl rand -hex 32)`;
  for (const { name, secret } of tokens) if (secret.length < SECRET_CHARS_MIN) warnings.push(`the token of principal "${name}" is ${secret.length} characters, short enough to be found by guessing: ${advice}`);
  for (const { name, secret } of accessKeys) if (secret.length < SECRET_CHARS_MIN) warnings.push(`the secret of access key "${name}" is ${secret.length} characters, short enough to be found by guessing: ${advice}`);
  if (jwtSecret !== undefined && jwtSecret !== '' && jwtSecret.length < SECRET_CHARS_MIN) warnings.push(`auditlake.auth.jwt.secret is ${jwtSecret.length} characters, short enough to be found by guessing: ${advice}`);
  return warnings;
}
