import { currentSnapshot, parseTableMetadata, snapshotAncestry, type IcebergTableMetadata } from '@auditlake/format';
import { metadataVersionKey, type IcebergTableRef, type LoadedTable, type ObjectStore } from '@auditlake/lake';
import { AuditError, AuditErrorCode, isAuditError } from '@auditlake/model';

/**
 * What readers that trust `version-hint.text` (icebird, DuckDB) see of a table whose hint names
 * an older version than the newest, which verify reads. An honest lag (a hint write still to
 * come, or one that failed until the next sweep moves it) names a version whose current snapshot
 * is one of the newest version's ancestry, with the same manifest list: those readers see an
 * older state of the history verify checks, said in the returned note. Any other is refused
 * (AUDIT_TABLE_INVALID): a metadata file rewritten behind a hint set back, whose snapshot lists
 * other files, showed those readers a table verify never read while it passed (review).
 * Undefined when the hint names the newest version (or none, or one that is gone: readers then
 * list the versions, as verify does).
 */
export async function checkHintedVersion(objects: ObjectStore, table: IcebergTableRef, loaded: LoadedTable, where: string): Promise<string | undefined> {
  const hinted = loaded.hintVersion ?? 0;
  if (hinted <= 0 || hinted >= loaded.version) return undefined;
  const bytes = await objects.find(metadataVersionKey(table, hinted));
  if (bytes === undefined) return undefined;
  const refuse = (why: string) =>
    new AuditError(AuditErrorCode.TABLE_INVALID, `version-hint.text of ${where} names v${hinted}, behind the newest v${loaded.version}, and ${why}: readers that trust the hint (icebird, DuckDB) read a table this verify does not vouch for`);
  let metadata: IcebergTableMetadata;
  try {
    metadata = parseTableMetadata(new TextDecoder().decode(bytes));
  } catch (err) {
    throw isAuditError(err) ? refuse(`its metadata does not parse (${err.message})`) : err;
  }
  const shown = currentSnapshot(metadata);
  if (shown === undefined) {
    if (metadata['current-snapshot-id'] !== undefined && metadata['current-snapshot-id'] !== null && metadata['current-snapshot-id'] !== -1) throw refuse(`its current snapshot ${metadata['current-snapshot-id']} is not among its snapshots`);
    return `verify: version-hint.text of ${where} names v${hinted}, behind the newest v${loaded.version}: readers that trust the hint see the table empty until the next commit moves it`;
  }
  const id = shown['snapshot-id'];
  const same = loaded.metadata.snapshots.find((snapshot) => snapshot['snapshot-id'] === id);
  if (same === undefined) throw refuse(`its current snapshot ${id} is not among the newest version's snapshots`);
  if (same['manifest-list'] !== shown['manifest-list'] || same['sequence-number'] !== shown['sequence-number']) {
    throw refuse(`its current snapshot ${id} names manifest list ${shown['manifest-list']} (sequence number ${shown['sequence-number']}), where the newest version names ${same['manifest-list']} (${same['sequence-number']})`);
  }
  if (!snapshotAncestry(loaded.metadata).some((snapshot) => snapshot['snapshot-id'] === id)) throw refuse(`its current snapshot ${id} is not in the ancestry of the newest version's current snapshot`);
  return `verify: version-hint.text of ${where} names v${hinted}, behind the newest v${loaded.version}: readers that trust the hint see snapshot ${id}, an earlier state of the history verified here, until the next commit moves it`;
}
