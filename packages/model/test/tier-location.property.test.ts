// Goal: a tier location is accepted only when no key built from it can leave its bucket prefix: property tests over random prefixes and names.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkS3Location, icebergTableProblem } from '../src/index.js';

const SEED = Number(process.env['FC_SEED'] ?? Date.now() % 1_000_000);

/** What the rule promises: joined under a bucket root and normalised as a file path would be, the prefix stays a plain descendant. */
function staysInside(prefix: string): boolean {
  const segments = prefix.split('/');
  return prefix === '' || segments.every((s) => s !== '' && s !== '.' && s !== '..');
}

describe('tier location rules (property tests)', () => {
  it(`accepts a random key prefix only when every segment is a plain name (seed ${SEED})`, () => {
    const segment = fc.oneof(fc.constantFrom('', '.', '..', ' ', 'a b', '..a', 'a..', '\u0000', '\u007f', '\\', '%2e%2e', '\ud800', 'x'), fc.string({ unit: 'binary', maxLength: 6 }));
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 6 }), fc.boolean(), (segments, leadingSlash) => {
        const prefix = (leadingSlash ? '/' : '') + segments.join('/');
        const check = checkS3Location(`s3://auditlake/${prefix}`);
        if (!check.ok) {
          expect(check.problem).toMatch(/key prefix/);
          return;
        }
        // Accepted: no empty/./.. segment, no control character, well-formed, no backslash.
        expect(staysInside(check.location.prefix)).toBe(true);
        expect(check.location.prefix.isWellFormed()).toBe(true);
        expect(check.location.prefix).not.toMatch(/[\u0000-\u001f\u007f-\u009f\\]/);
        expect(check.location.prefix.startsWith('/')).toBe(false);
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it(`accepts an Iceberg table only when schema and table are identifiers (seed ${SEED})`, () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 8 }), fc.string({ unit: 'binary', maxLength: 8 }), (schema, table) => {
        const problem = icebergTableProblem(`local.${schema}.${table}`);
        const identifier = /^[A-Za-z_][A-Za-z0-9_]*$/;
        expect(problem === undefined).toBe(identifier.test(schema) && identifier.test(table));
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });
});

describe('tier location rules (examples)', () => {
  it.each([
    ['s3://auditlake/../../../../tmp/x', "the key prefix has a '..' segment"],
    ['s3://auditlake/audit/./x', "the key prefix has a '.' segment"],
    ['s3://auditlake//audit', "the key prefix must not start with '/'"],
    ['s3://auditlake/a//b', "the key prefix has an empty segment (a doubled '/')"],
    ['s3://auditlake/a\tb', 'the key prefix has a control character (U+0009)'],
    ['s3://auditlake/a\\..\\b', "the key prefix has a '\\'"],
    ['s3://Audit/x', "the bucket name 'Audit' may hold only lower-case letters"],
    ['s3://ab/x', "the bucket name 'ab' must have 3 to 63 characters"],
    ['s3://a..b/x', "the bucket name 'a..b' must not have two adjacent periods"],
    ['s3://192.168.1.1/x', "the bucket name '192.168.1.1' must not be an IP address"],
    ['http://auditlake/x', 'it must start with s3://'],
  ])('refuses %s: %s', (text, problem) => {
    const check = checkS3Location(text);
    expect(check.ok).toBe(false);
    expect(check.ok ? '' : check.problem).toContain(problem);
  });

  it('accepts a plain location, with or without one trailing slash, and the bucket root', () => {
    expect(checkS3Location('s3://auditlake/audit/prod')).toEqual({ ok: true, location: { bucket: 'auditlake', prefix: 'audit/prod' } });
    expect(checkS3Location('s3://auditlake/audit/')).toEqual({ ok: true, location: { bucket: 'auditlake', prefix: 'audit' } });
    expect(checkS3Location('s3://my.bucket-1')).toEqual({ ok: true, location: { bucket: 'my.bucket-1', prefix: '' } });
  });

  it.each([
    ['local.a/b.c', "the schema name 'a/b' may hold only letters, digits and '_'"],
    ['local.ops.audit-events', "the table name 'audit-events' may hold only"],
    ['local.ops.', 'the table name is empty'],
    ['local..t', 'the schema name is empty'],
    ['local.1ops.t', "the schema name '1ops' may hold only"],
    ['ice.audit_events', 'it must be catalog.schema.table'],
  ])('refuses the Iceberg table %s: %s', (identifier, problem) => {
    expect(icebergTableProblem(identifier)).toContain(problem);
  });
});
