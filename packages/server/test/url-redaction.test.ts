// Goal: credential query parameters never reach a log line, by the same key names ingest masks in audit text plus log-only ones.
import { describe, expect, it } from 'vitest';
import { DEFAULT_REDACT_KEYS } from '@auditlake/model';
import { REDACTED, redactUrl } from '../src/url-redaction.js';

describe('redactUrl', () => {
  it('masks the values of credential parameters, named as before', () => {
    const names = ['token', 'access_token', 'id-token', 'refresh_token', 'auth', 'Authorization', 'api_key', 'key', 'secret', 'password', 'passwd', 'pwd', 'jwt', 'sig', 'signature', 'X-Amz-Signature', 'credential', 'credentials', 'session', 'sessionid', 'code', 'client_secret', 'X-Amz-Security-Token', 'accessKey', 'bearer', 'pass', 'pw', 'otp', 'totp', 'client_assertion'];
    for (const name of names) expect(redactUrl(`/admin/audit?q=x&${name}=v1&limit=5`), name).toBe(`/admin/audit?q=x&${name}=${REDACTED}&limit=5`);
  });

  it('masks every default audit.redact.keys name too, so the two lists cannot drift apart', () => {
    for (const key of DEFAULT_REDACT_KEYS) expect(redactUrl(`/x?${key}=v1`), key).toBe(`/x?${key}=${REDACTED}`);
    expect(redactUrl('/x?ssl.passphrase=v1&X-Goog-Signature=v2#f')).toBe(`/x?ssl.passphrase=${REDACTED}&X-Goog-Signature=${REDACTED}#f`);
  });

  it('leaves other parameters, and URLs without a query, as they were', () => {
    for (const url of ['/admin/audit', '/admin/audit?q=password&user=bob&signal=1&design=x&limit=5', '/x?a=1#token=y']) expect(redactUrl(url)).toBe(url);
  });
});
