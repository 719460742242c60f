import { ParquetTierSource, type S3Connections } from '@auditlake/lake';
import { duckdbOverObjects } from '@auditlake/lake/testing';
import { onTestFinished } from 'vitest';

/**
 * DuckDB over exactly the files a Parquet location's readers read (commit markers and
 * compactions applied), downloaded into a fresh directory under `scratch`: the rows of
 * `select`, in which `{files}` stands for the `read_parquet` list of those files.
 */
export async function duckdbOverLiveParquet(connections: S3Connections, location: { path: string; connectionId: string }, scratch: string, select: string): Promise<Array<Record<string, unknown>>> {
  const source = new ParquetTierSource(connections, { mode: 'parquet', ...location });
  onTestFinished(() => source.close());
  const objects = connections.bucket(location.connectionId, new URL(location.path).host);
  return duckdbOverObjects(objects, (await source.listFiles()).map((file) => file.key), scratch, select);
}
