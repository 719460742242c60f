/**
 * Why `name` is not a valid S3 bucket name (the general-purpose bucket rules), or undefined:
 * 3 to 63 characters of lower-case letters, digits, `.` and `-`, starting and ending with a
 * letter or digit, no `..`, and not shaped like an IP address.
 */
export function bucketNameProblem(name: string): string | undefined {
  if (name.length < 3 || name.length > 63) return 'a bucket name has 3 to 63 characters';
  if (!/^[a-z0-9][a-z0-9.-]*[a-z0-9]$/.test(name)) return 'a bucket name has only lower-case letters, digits, . and -, and starts and ends with a letter or digit';
  if (name.includes('..')) return 'a bucket name has no two adjacent periods';
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return 'a bucket name is not an IP address';
  return undefined;
}
