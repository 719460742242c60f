import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { ParquetTierSource, type S3Connections } from '@auditlake/lake';
import { onTestFinished } from 'vitest';

/**
 * DuckDB over exactly the files a Parquet location's readers read (commit markers and
 * compactions applied), downloaded into a fresh directory under `scratch`: the rows of
 * `select`, in which `{files}` stands for the `read_parquet` list of those files.
 */
export async function duckdbOverLiveParquet(connections: S3Connections, location: { path: string; connectionId: string }, scratch: string, select: string): Promise<Array<Record<string, unknown>>> {
  const source = new ParquetTierSource(connections, { mode: 'parquet', ...location });
  onTestFinished(() => source.close());
  const bucket = new URL(location.path).host;
  const objects = connections.bucket(location.connectionId, bucket);
  const local = await mkdtemp(join(scratch, 'duck-'));
  const paths: string[] = [];
  for (const file of await source.listFiles()) {
    const target = join(local, file.key);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, await objects.get(file.key));
    paths.push(target);
  }
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const files = `read_parquet([${paths.map((p) => `'${p}'`).join(',')}])`;
    return (await connection.runAndReadAll(select.replace('{files}', files))).getRowObjectsJson();
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
