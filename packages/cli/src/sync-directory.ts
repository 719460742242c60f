import { open } from 'node:fs/promises';
import { AuditError, AuditErrorCode } from '@auditlake/model';

/**
 * Makes a rename in `dir` durable (a file renamed into place can otherwise come back under its
 * old name, or not at all, after a power loss); a platform that cannot fsync a directory
 * (Windows) skips it. `what` names the directory in the error: "the export's directory".
 */
export async function syncDirectory(dir: string, what: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'EBADF') {
      throw new AuditError(AuditErrorCode.UNREACHABLE, `${what} ${dir} could not be synced: ${code ?? (err as Error).message}`, { cause: err });
    }
  } finally {
    await handle?.close();
  }
}
