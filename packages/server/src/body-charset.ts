import { AuditError, AuditErrorCode } from '@auditlake/model';

/** The charsets a request body may declare: UTF-8 under its registered name and its common alias. */
const UTF8_NAMES = new Set(['utf-8', 'utf8']);

/** The `charset` parameter of a Content-Type, unquoted and lower-cased, or undefined when none is given. */
export function declaredCharset(contentType: string): string | undefined {
  for (const parameter of contentType.split(';').slice(1)) {
    const eq = parameter.indexOf('=');
    if (eq === -1 || parameter.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    return parameter.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1').toLowerCase();
  }
  return undefined;
}

/**
 * Refuses a request body declared in another charset (415). Bodies are read as UTF-8 only:
 * reading Latin-1 bytes as UTF-8 would refuse or alter them, and transcoding would store
 * something other than the bytes that were sent.
 */
export function assertUtf8Charset(contentType: string | undefined): void {
  if (contentType === undefined) return;
  const charset = declaredCharset(contentType);
  if (charset === undefined || UTF8_NAMES.has(charset)) return;
  throw new AuditError(AuditErrorCode.UNSUPPORTED_MEDIA_TYPE, `unsupported charset ${charset}: request bodies must be UTF-8 (send Content-Type: application/json or application/json; charset=utf-8)`);
}

/**
 * Refuses a compressed request body (415). Bodies are taken as sent: a gzip body was read as
 * JSON and refused as "not valid UTF-8 at byte offset 1", which named the wrong problem.
 */
export function assertIdentityEncoding(contentEncoding: string | undefined): void {
  if (contentEncoding === undefined) return;
  // Codings listed in the order applied; Node joins repeated headers with commas.
  const codings = contentEncoding.split(',').map((coding) => coding.trim().toLowerCase());
  const applied = codings.find((coding) => coding !== '' && coding !== 'identity');
  if (applied === undefined) return;
  throw new AuditError(AuditErrorCode.UNSUPPORTED_MEDIA_TYPE, `unsupported Content-Encoding ${applied}: request bodies are taken uncompressed (send the JSON without Content-Encoding)`);
}
