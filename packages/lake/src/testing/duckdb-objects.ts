import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { ObjectStore } from '../object-store.js';

/**
 * DuckDB over the Parquet objects `keys` as the bucket holds them, downloaded into a fresh
 * directory under `scratch`: the rows of `select`, in which `{files}` stands for the
 * `read_parquet` list of those files. An independent reader of what a tier holds.
 */
export async function duckdbOverObjects(objects: ObjectStore, keys: readonly string[], scratch: string, select: string): Promise<Array<Record<string, unknown>>> {
  const local = await mkdtemp(join(scratch, 'duck-'));
  const paths: string[] = [];
  for (const key of keys) {
    const target = join(local, key);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, await objects.get(key));
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
