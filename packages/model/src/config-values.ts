import { AuditError, AuditErrorCode } from './audit-error.js';

/** Parses one configuration or setting value; throws a message naming what is wrong. */
export type ValueParser<T> = (value: string) => T;

class ValueError extends Error {}

export function parseFailure(message: string): never {
  throw new ValueError(message);
}

/** Plain decimal digits only: `0x10`, `1e2` and `+5` are refused, not reinterpreted. */
const DIGITS = /^\d+$/;
const DECIMAL = /^\d+(\.\d+)?$/;

export const positiveInt: ValueParser<number> = (v) => {
  const n = Number(v);
  if (!DIGITS.test(v) || !Number.isSafeInteger(n) || n <= 0) parseFailure('must be a positive integer');
  return n;
};

export const nonNegativeInt: ValueParser<number> = (v) => {
  const n = Number(v);
  if (!DIGITS.test(v) || !Number.isSafeInteger(n)) parseFailure('must be a non-negative integer');
  return n;
};

/**
 * The least `audit.tier.maintenance.orphan.min.age.ms` accepted (1 hour). Orphan cleanup deletes
 * unreferenced files older than that; a commit still being written — by this leader, or by a new
 * one while a deposed leader's cleanup runs — has unreferenced files until it lands, so a smaller
 * value lets cleanup delete them. (Iceberg's own Spark action refuses cutoffs under 24 hours.)
 */
export const ORPHAN_MIN_AGE_FLOOR_MS = 60 * 60 * 1000;

/** A non-negative integer of milliseconds, at least {@link ORPHAN_MIN_AGE_FLOOR_MS}. */
export const orphanMinAge: ValueParser<number> = (v) => {
  const n = nonNegativeInt(v);
  if (n < ORPHAN_MIN_AGE_FLOOR_MS) parseFailure(`must be at least ${ORPHAN_MIN_AGE_FLOOR_MS} (1 hour; younger unreferenced files may belong to a commit still being written)`);
  return n;
};

export const integer: ValueParser<number> = (v) => {
  const n = Number(v);
  if (!/^-?\d+$/.test(v) || !Number.isSafeInteger(n)) parseFailure('must be an integer');
  return n;
};

export const boolean: ValueParser<boolean> = (v) => {
  const lower = v.trim().toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  return parseFailure('must be true or false');
};

export const fraction: ValueParser<number> = (v) => {
  const n = Number(v);
  if (!DECIMAL.test(v) || n > 1) parseFailure('must be a number from 0.0 to 1.0');
  return n;
};

export const text: ValueParser<string> = (v) => v.trim();

/**
 * A comma-separated list of host names (`auditlake.http.allowed.hosts`), lower-cased, without a
 * trailing dot: names only, no port, scheme, path or wildcard, each a valid DNS name.
 */
export const hostNames: ValueParser<readonly string[]> = (v) => {
  if (v.trim() === '') return [];
  return v.split(',').map((entry) => {
    const name = entry.trim().toLowerCase().replace(/\.$/, '');
    if (name === '') parseFailure('must be a comma-separated list of host names, with no empty entry');
    if (name.length > 253 || !/^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*$/.test(name)) {
      parseFailure(`must list host names only (letters, digits, '-', '_' and dots; no port, scheme, path or wildcard), got ${JSON.stringify(entry.trim())}`);
    }
    return name;
  });
};

/** Runs `parse`, turning its failure into a coded error naming `key` and the raw value. */
export function parseNamed<T>(key: string, value: string, parse: ValueParser<T>, code: AuditErrorCode): T {
  try {
    return parse(value.trim());
  } catch (err) {
    if (err instanceof ValueError) throw new AuditError(code, `${key} ${err.message}: ${value}`);
    throw err;
  }
}

export function configError(message: string): AuditError {
  return new AuditError(AuditErrorCode.CONFIG_INVALID, message);
}
