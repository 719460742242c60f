// Goal: `auditlake export` writes every matching event exactly once, newest first, in each format, read back by independent readers (DuckDB for Parquet and CSV, apache-arrow for Arrow), and fails without leaving a file or showing a password given in --url.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { lstat, mkdir, readdir, readFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { RecordBatchStreamReader, tableFromIPC } from 'apache-arrow';
import { toEventOutput, type EventOutput } from '@auditlake/model';
import type { AuditNode } from '@auditlake/server';
import { beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, ingest, runExport, startNode, tempDir } from './import-node.js';

const T0 = 1_792_288_263_000;
const TOTAL = 1_234;
const PAGE = 200;

/** Events that stress every writer: quotes, commas, line breaks, edge spaces, unicode, equal times. */
function events(count: number, fromMs: number): Array<Record<string, unknown>> {
  return Array.from({ length: count }, (_, i) => ({
    eventId: `ev-${fromMs}-${String(i).padStart(5, '0')}`,
    source: ['trino', 'spark', 'gravitino'][i % 3],
    userId: i % 50 === 0 ? 'Zoë "quoted", with\nnewline' : `user${i % 7}`,
    action: i % 5 === 0 ? 'GRANT_ROLE' : 'data:Select',
    resource: i % 11 === 0 ? '' : `hive.s.t${i % 13}`,
    tables: i % 4 === 0 ? [] : [`hive.s.t${i % 13}`, 'hive.s.common'],
    query: i % 9 === 0 ? ` SELECT 'a,b' , "x"\r\nFROM t -- 🦆 ` : `SELECT ${i}`,
    details: i % 17 === 0 ? '{"k": "v, w"}' : i % 23 === 0 ? 'line one\nline two' : i % 29 === 0 ? 'cr\ronly' : '',
    ...(i % 3 === 2 ? {} : { decision: i % 3 === 0 ? 'ALLOW' : 'DENY' }),
    // Every third event shares its millisecond with the next: the order falls back to ingestTs and eventId.
    ts: fromMs + Math.floor(i / 3) * 1000,
  }));
}

/** Every stored event, newest first, as the API answers them: what a full export must hold. */
async function storedOutputs(node: AuditNode, filter: { decision?: 'DENY' } = {}): Promise<EventOutput[]> {
  const out: EventOutput[] = [];
  for await (const event of node.store.search({ action: 'all', ...filter })) out.push(toEventOutput(event));
  return out;
}

/** An event in the export columns, as DuckDB reads them from Parquet (and from CSV with types). */
function columnsOf(e: EventOutput): Record<string, unknown> {
  return {
    event_id: e.eventId,
    source: e.source,
    user_id: e.userId,
    action: e.action,
    resource: e.resource,
    tables: e.tables.join(','),
    query: e.query,
    details: e.details,
    ts: BigInt(e.timestamp),
    event_time_ms: BigInt(e.timestamp),
    decision: e.decision,
    ingest_ts: BigInt(e.ingestTs),
  };
}

const COLUMN_TYPES = [
  ['event_id', 'VARCHAR'],
  ['source', 'VARCHAR'],
  ['user_id', 'VARCHAR'],
  ['action', 'VARCHAR'],
  ['resource', 'VARCHAR'],
  ['tables', 'VARCHAR'],
  ['query', 'VARCHAR'],
  ['details', 'VARCHAR'],
  ['ts', 'BIGINT'],
  ['event_time', 'TIMESTAMP WITH TIME ZONE'],
  ['decision', 'VARCHAR'],
  ['ingest_ts', 'BIGINT'],
];

async function duckdb(sql: string, file: string): Promise<Array<Record<string, unknown>>> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    return (await connection.runAndReadAll(sql, [file])).getRowObjects();
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

describe('auditlake export', () => {
  let node: AuditNode;
  let expected: EventOutput[];
  let dir: string;
  const cleanups: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    const register = (fn: () => Promise<void>) => cleanups.push(fn);
    node = await startNode({}, register);
    dir = await tempDir(register);
    await ingest(node, events(TOTAL, T0));
    expected = await storedOutputs(node);
    expect(expected).toHaveLength(TOTAL);
    return async () => {
      for (const fn of cleanups.reverse()) await fn();
    };
  });

  it('ndjson: every event once, newest first, as the API answers it, over many pages', async () => {
    const out = join(dir, 'all.ndjson');
    const run = await runExport(node, ['--format', 'ndjson', '--page-size', String(PAGE), '--out', out]);
    expect(run.stderr).toBe('');
    expect(run).toMatchObject({ code: 0, stdout: `exported ${TOTAL} events to ${out}\n` });
    const lines = (await readFile(out, 'utf8')).split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((line) => JSON.parse(line) as EventOutput)).toEqual(expected);
  });

  it('parquet: DuckDB reads the tiered column names and types and every row', async () => {
    const out = join(dir, 'all.parquet');
    expect((await runExport(node, ['--format', 'parquet', '--page-size', String(PAGE), '--out', out])).code).toBe(0);
    const types = await duckdb('SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet($1))', out);
    expect(types.map((row) => [row['column_name'], row['column_type']])).toEqual(COLUMN_TYPES);
    const rows = await duckdb('SELECT * EXCLUDE (event_time), epoch_ms(event_time) AS event_time_ms FROM read_parquet($1)', out);
    expect(rows).toEqual(expected.map(columnsOf));
    // One row group a page: the file was written as the pages came.
    const groups = await duckdb('SELECT count(DISTINCT row_group_id) AS n FROM parquet_metadata($1)', out);
    expect(groups[0]?.['n']).toBe(BigInt(Math.ceil(TOTAL / PAGE)));
  });

  it('csv: DuckDB reads the header and every field back exactly, quotes and line breaks included', async () => {
    const out = join(dir, 'all.csv');
    expect((await runExport(node, ['--format', 'csv', '--page-size', String(PAGE), '--out', out])).code).toBe(0);
    const sql = `SELECT * EXCLUDE (event_time), epoch_ms(event_time) AS event_time_ms FROM read_csv($1, header = true, quote = '"', escape = '"', strict_mode = true,
      columns = {'event_id': 'VARCHAR', 'source': 'VARCHAR', 'user_id': 'VARCHAR', 'action': 'VARCHAR', 'resource': 'VARCHAR', 'tables': 'VARCHAR',
                 'query': 'VARCHAR', 'details': 'VARCHAR', 'ts': 'BIGINT', 'event_time': 'TIMESTAMPTZ', 'decision': 'VARCHAR', 'ingest_ts': 'BIGINT'})`;
    const rows = await duckdb(sql, out);
    // DuckDB reads an empty unquoted field as NULL; the export has no nulls, only empty strings.
    const emptyAsNull = (row: Record<string, unknown>) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v === '' ? null : v]));
    expect(rows).toEqual(expected.map(columnsOf).map(emptyAsNull));
    const text = await readFile(out, 'utf8');
    expect(text.split('\r\n')[0]).toBe(COLUMN_TYPES.map(([name]) => name).join(','));
  });

  it('arrow: one IPC stream, a record batch a page, that apache-arrow reads back', async () => {
    const out = join(dir, 'all.arrows');
    expect((await runExport(node, ['--format', 'arrow', '--page-size', String(PAGE), '--out', out])).code).toBe(0);
    const bytes = await readFile(out);
    const table = tableFromIPC(bytes);
    expect(table.schema.fields.map((f) => f.name)).toEqual(COLUMN_TYPES.map(([name]) => name));
    expect(table.numRows).toBe(TOTAL);
    const rows = table.toArray().map((row: { toJSON(): Record<string, unknown> }) => row.toJSON());
    expect(rows.map((row) => ({ ...row, event_time: undefined }))).toEqual(
      expected.map((e) => ({ ...columnsOf(e), ts: BigInt(e.timestamp), event_time_ms: undefined, event_time: undefined })).map(({ event_time_ms: _ms, ...rest }) => rest),
    );
    let batches = 0;
    for (const batch of RecordBatchStreamReader.from(bytes)) batches += batch.numRows > 0 ? 1 : 0;
    expect(batches).toBe(Math.ceil(TOTAL / PAGE));
  });

  it('ocsf: one API Activity record a line, each event once', async () => {
    const run = await runExport(node, ['--format', 'ocsf', '--page-size', String(PAGE)]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe(`exported ${TOTAL} events\n`);
    const records = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { metadata: { uid: string } });
    expect(records.map((r) => r.metadata.uid)).toEqual(expected.map((e) => e.eventId));
    const grant = expected.findIndex((e) => e.action === 'GRANT_ROLE' && e.decision === 'DENY');
    expect(records[grant]).toMatchObject({
      class_uid: 6003,
      category_uid: 6,
      activity_id: 3,
      type_uid: 600303,
      status_id: 2,
      status: 'Failure',
      time: expected[grant]!.timestamp,
      actor: { user: { name: expected[grant]!.userId } },
      api: { operation: 'GRANT_ROLE', service: { name: expected[grant]!.source } },
    });
  });

  it('exports only what the filters select, exactly the events the search returns', async () => {
    const run = await runExport(node, ['--format', 'ndjson', '--decision', 'DENY', '--page-size', '37']);
    expect(run.code).toBe(0);
    const got = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as EventOutput);
    expect(got).toEqual(await storedOutputs(node, { decision: 'DENY' }));
    expect(got.length).toBeGreaterThan(PAGE);
  });

  it('an empty result is a file with the format’s empty shape', async () => {
    for (const format of ['csv', 'parquet', 'arrow', 'ndjson'] as const) {
      const out = join(dir, `empty.${format}`);
      const run = await runExport(node, ['--format', format, '--user', 'nobody', '--out', out]);
      expect(run).toMatchObject({ code: 0, stdout: `exported 0 events to ${out}\n` });
      if (format === 'parquet') expect((await duckdb('SELECT count(*) AS n FROM read_parquet($1)', out))[0]?.['n']).toBe(0n);
      if (format === 'arrow') expect(tableFromIPC(await readFile(out)).numRows).toBe(0);
      if (format === 'csv') expect(await readFile(out, 'utf8')).toBe(COLUMN_TYPES.map(([name]) => name).join(',') + '\r\n');
      if (format === 'ndjson') expect(await readFile(out, 'utf8')).toBe('');
    }
  });

  it('events that arrive during the export are not in it, and nothing repeats', async () => {
    const newer = events(600, T0 + 10_000_000);
    const out = join(dir, 'during.ndjson');
    // The new events arrive right after the node answered the first page: deterministic, no race.
    let pagesAnswered = 0;
    const fetchThenIngest: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (url.includes('/admin/audit?') && ++pagesAnswered === 1) await ingest(node, newer);
      return response;
    };
    const run = await runExport(node, ['--format', 'ndjson', '--page-size', '50', '--out', out], { fetch: fetchThenIngest });
    expect(run.code).toBe(0);
    expect(pagesAnswered).toBeGreaterThan(2);
    const ids = (await readFile(out, 'utf8'))
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as EventOutput).eventId);
    // Every event stored before the first page, once each, in order; none of those that came after it.
    expect(ids).toEqual(expected.map((e) => e.eventId));
    expect((await storedOutputs(node)).length).toBe(expected.length + newer.length);
  });

  it('refuses bad usage with exit 2 and a message naming the problem, writing nothing', async () => {
    const cases: Array<[string[], string]> = [
      [['--out', join(dir, 'x.csv')], '--format is required'],
      [['--format', 'xml', '--out', join(dir, 'x.csv')], '--format must be one of ndjson, csv, arrow, parquet, ocsf: xml'],
      [['--format', 'csv', '--decision', 'maybe', '--out', join(dir, 'x.csv')], 'parameter decision must be ALLOW, DENY or none: maybe'],
      [['--format', 'csv', '--page-size', '0', '--out', join(dir, 'x.csv')], '--page-size must be a positive integer: 0'],
      [['--format', 'csv', '--from', '2026-11-01T09:00', '--out', join(dir, 'x.csv')], 'from'],
      // The node's own cap, refused by the node.
      [['--format', 'csv', '--page-size', '5001', '--out', join(dir, 'x.csv')], '5000'],
      [['--format', 'csv', '--out', join(dir, 'missing-dir', 'x.csv')], `--out ${join(dir, 'missing-dir', 'x.csv')}`],
    ];
    for (const [args, message] of cases) {
      const run = await runExport(node, args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toContain(message);
    }
    expect((await readdir(dir)).filter((name) => name.startsWith('x.'))).toEqual([]);
  });

  it('refuses an --out that is an existing directory with one line naming it, exit 2, leaving nothing', async () => {
    const out = join(dir, 'a-directory');
    await mkdir(out);
    for (const format of ['ndjson', 'arrow', 'parquet'] as const) {
      const run = await runExport(node, ['--format', format, '--out', out]);
      expect(run).toEqual({ code: 2, stdout: '', stderr: `auditlake export: --out ${out}: is a directory; name a file to write the export to\n` });
    }
    expect((await readdir(dir)).filter((name) => name.startsWith('a-directory'))).toEqual(['a-directory']);
    expect(await readdir(out)).toEqual([]);
  });

  it('refuses an --out that is a FIFO or a symbolic link with one line naming it and what it is, exit 2, leaving it as it was', async () => {
    const fifo = join(dir, 'a-fifo');
    execFileSync('mkfifo', [fifo]);
    const link = join(dir, 'a-link.ndjson');
    await symlink(join(dir, 'a-link-target'), link);
    const byFifo = await runExport(node, ['--format', 'ndjson', '--out', fifo]);
    expect(byFifo).toEqual({ code: 2, stdout: '', stderr: `auditlake export: --out ${fifo}: is a FIFO, which the export would replace with a file; to write to it, leave out --out and redirect standard output\n` });
    const byLink = await runExport(node, ['--format', 'ndjson', '--out', link]);
    expect(byLink.code).toBe(2);
    expect(byLink.stderr).toContain(`--out ${link}: is a symbolic link (to ${join(dir, 'a-link-target')})`);
    expect((await lstat(fifo)).isFIFO()).toBe(true);
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect((await readdir(dir)).filter((name) => name.startsWith('a-fifo') || name.startsWith('a-link')).sort()).toEqual(['a-fifo', 'a-link.ndjson']);
  });

  it('fails with exit 1 and leaves no file when the node cannot be reached or refuses the token', async () => {
    const out = join(dir, 'failed.parquet');
    const unreachable = await runExport(node, ['--format', 'parquet', '--url', 'http://127.0.0.1:1', '--out', out], { attemptsMax: 2, sleep: async () => undefined });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain('no answer after 2 attempts');
    expect(unreachable.stderr).toContain(`nothing was written to ${out}`);
    const refused = await runExport(node, ['--format', 'parquet', '--token', 'wrong', '--out', out]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('refused the token (401)');
    expect((await readdir(dir)).filter((name) => name.startsWith('failed.'))).toEqual([]);
    expect(ADMIN_TOKEN).not.toBe('wrong');
  });

  it('masks the user and password of --url in retry notes and failures', async () => {
    const out = join(dir, 'masked.ndjson');
    const secretUrl = node.url.replace('http://', 'http://bob:s3cr3t@');
    const masked = node.url.replace('http://', 'http://***@');
    const busy = await runExport(node, ['--format', 'ndjson', '--url', secretUrl, '--out', out], {
      attemptsMax: 3,
      fetch: async () => new Response('{"error":"busy"}', { status: 503 }),
      sleep: async () => undefined,
    });
    expect(busy.code).toBe(1);
    expect(busy.stderr.split(`auditlake export: ${masked} did not answer (503 busy)`)).toHaveLength(3);
    expect(busy.stderr).toContain(`${masked}/admin/audit`);
    const real = await runExport(node, ['--format', 'ndjson', '--url', secretUrl, '--out', out], { attemptsMax: 2, sleep: async () => undefined });
    expect(real.code).toBe(1);
    expect(real.stderr).toContain(`${masked}/admin/audit`);
    for (const output of [busy, real]) expect(output.stderr).not.toMatch(/bob|s3cr3t/);
  });

  it('--to with a bare date exports the whole of that UTC day, its last millisecond included, the next day not', async () => {
    const at = {
      beforeFrom: Date.UTC(2026, 9, 31, 23, 59, 59, 999),
      fromDay: Date.UTC(2026, 10, 1),
      afternoon: Date.UTC(2026, 10, 30, 15),
      lastMs: Date.UTC(2026, 10, 30, 23, 59, 59, 999),
      nextDay: Date.UTC(2026, 11, 1),
    };
    await ingest(node, Object.entries(at).map(([name, ts]) => ({ eventId: `day-edge-${name}`, source: 'trino', userId: 'day-edge', action: 'data:Select', ts })));
    const run = await runExport(node, ['--format', 'ndjson', '--user', 'day-edge', '--from', '2026-11-01', '--to', '2026-11-30']);
    expect(run.stderr).toBe('exported 3 events\n');
    expect(run.code).toBe(0);
    const ids = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as EventOutput).eventId);
    expect(ids).toEqual(['day-edge-lastMs', 'day-edge-afternoon', 'day-edge-fromDay']);
  });
});

describe('auditlake export (real process)', () => {
  it('writes to standard output, the summary to standard error, exit 0; usage errors exit 2', async () => {
    const node = await startNode();
    await ingest(node, events(300, T0));
    const cli = async (args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> => {
      const child = spawn(process.execPath, [join(import.meta.dirname, '..', 'dist', 'bin.js'), 'export', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      return { code, stdout, stderr };
    };
    const ok = await cli(['--format', 'ndjson', '--url', node.url, '--token', ADMIN_TOKEN, '--page-size', '64']);
    expect(ok.stderr).toBe('exported 300 events\n');
    expect(ok.code).toBe(0);
    expect(ok.stdout.trimEnd().split('\n').map((line) => (JSON.parse(line) as EventOutput).eventId)).toEqual((await storedOutputs(node)).map((e) => e.eventId));
    const usage = await cli(['--format', 'yaml', '--url', node.url, '--token', ADMIN_TOKEN]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--format must be one of ndjson, csv, arrow, parquet, ocsf: yaml');
    expect(usage.stdout).toBe('');
  });
});
