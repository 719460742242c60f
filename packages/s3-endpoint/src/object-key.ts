/** The longest key S3 accepts, in UTF-8 bytes. */
export const OBJECT_KEY_BYTES_MAX = 1024;
/**
 * The longest segment (between slashes) this endpoint stores: a segment becomes a file name
 * with a suffix of up to 22 bytes (`._S3rver_metadata.json`), and file names end at 255 bytes.
 */
export const KEY_SEGMENT_BYTES_MAX = 230;
/** s3rver names an object's files `<segment>._S3rver_<resource>`; a key must never forge one. */
const RESERVED_MARK = '._S3rver_';

/**
 * Why `key` cannot be stored here, or undefined when it can. Keys become file paths under the
 * bucket's directory, so every segment must be a plain file name: no empty segment (a leading
 * or doubled `/` would collapse into another key's path), no `.` or `..` (which would leave
 * the bucket directory), no control characters, well-formed Unicode only. One trailing `/` is
 * allowed: `a/b/` is a directory marker (Hadoop-style catalogs write them for namespaces),
 * stored as a file inside `a/b`.
 */
export function objectKeyProblem(key: string): string | undefined {
  if (key === '') return 'the object key is empty';
  // In a u-mode regex a surrogate pair is one code point: \p{Cs} matches only a lone surrogate.
  if (/\p{Cs}/u.test(key)) return 'the object key is not well-formed Unicode (it has a lone surrogate)';
  if (Buffer.byteLength(key, 'utf8') > OBJECT_KEY_BYTES_MAX) return `the object key is longer than ${OBJECT_KEY_BYTES_MAX} bytes`;
  if (/[\u0000-\u001f\u007f]/.test(key)) return 'the object key has a control character';
  const segments = key.split('/');
  if (segments.length > 1 && segments.at(-1) === '') segments.pop();
  for (const segment of segments) {
    if (segment === '') return "the object key has an empty segment (a leading or doubled '/')";
    if (segment === '.' || segment === '..') return `the object key has a '${segment}' segment`;
    if (segment.includes(RESERVED_MARK)) return `the object key has a segment containing '${RESERVED_MARK}', which this endpoint reserves for its own files`;
    if (Buffer.byteLength(segment, 'utf8') > KEY_SEGMENT_BYTES_MAX) return `the object key has a segment longer than ${KEY_SEGMENT_BYTES_MAX} bytes`;
  }
  return undefined;
}
