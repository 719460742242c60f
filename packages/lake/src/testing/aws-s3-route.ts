import { signedFetch } from '@auditlake/s3-endpoint';

/**
 * Sends what `fetch` asks of AWS S3 hosts (`https://<bucket>.s3.amazonaws.com/…`, where icebird
 * resolves `s3://` URLs, unsigned) to a local S3 endpoint instead, signed with `credentials`
 * (SigV4), and changes nothing else. Returns what puts `fetch` back: a test passes it to
 * `onTestFinished`, or calls it in a `finally`.
 */
export function routeAwsS3To(endpoint: string, credentials: { accessKeyId: string; secretAccessKey: string }): () => void {
  const original = globalThis.fetch;
  const signed = signedFetch({ credentials, fetch: original });
  globalThis.fetch = ((input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const match = /^https:\/\/([a-z0-9.-]+)\.s3\.amazonaws\.com(\/.*)$/.exec(url);
    return match ? signed(`${endpoint}/${match[1]}${match[2]}`, init) : original(input, init);
  });
  return () => {
    globalThis.fetch = original;
  };
}
