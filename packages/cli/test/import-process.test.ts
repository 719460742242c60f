// Goal: a real `auditlake import` process resumes after kill -9 storing nothing twice, reads stdin and gzip, and answers with the documented exit statuses.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it, onTestFinished } from 'vitest';
import { importCommand } from '../src/import-command.js';
import { ImportProgress } from '../src/import-progress.js';
import type { AuditNode } from '@auditlake/server';
import { allEvents, FIXTURES, INGEST_TOKEN, runImport, startNode, tempDir } from './import-node.js';

const BIN = join(import.meta.dirname, '..', 'dist', 'bin.js');

interface Child {
  exited: Promise<number | null>;
  output: () => string;
  kill: () => void;
}

function startCli(args: string[], stdin?: Buffer, cwd?: string): Child {
  const child = spawn(process.execPath, [BIN, 'import', ...args], { stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'], ...(cwd === undefined ? {} : { cwd }) });
  let output = '';
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  if (stdin && child.stdin) child.stdin.end(stdin);
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return { exited, output: () => output, kill: () => child.kill('SIGKILL') };
}

/** An LHO audit file of `count` records (one per line), each a distinct event. */
function lhoFile(count: number): string {
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    lines.push(JSON.stringify({ timestamp: 1_780_300_000_000 + i, hostName: 'clo-0', serviceName: 'lho', userName: `u${i % 17}`, clientIp: '10.0.0.1', role: 'admin', action: 'VIEW_TASK', outcome: 'SUCCESS', message: `m${i}`, taskId: `task-${i}` }));
  }
  return lines.join('\n') + '\n';
}

/** Every stored eventId, straight from the node's store (the search API answers at most a page). */
/** The imported events' ids: the node's own records (its integrity checkpoints) are not imported ones. */
async function storedIds(node: AuditNode): Promise<string[]> {
  const ids: string[] = [];
  for await (const event of node.store.search({ action: 'all' })) if (event.source !== 'auditlake') ids.push(event.eventId);
  return ids;
}

describe('auditlake import (real process)', () => {
  it('resumes after kill -9 from its resume file: every record stored exactly once', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.1');
    const total = 30_000;
    await writeFile(file, lhoFile(total));
    const resume = join(dir, 'progress.json');
    const args = ['--format', 'lho', '--url', node.url, '--token', INGEST_TOKEN, '--resume-file', resume, file];

    const progressOf = async (): Promise<{ line: number; complete: boolean } | undefined> => {
      const state = JSON.parse(await readFile(resume, 'utf8').catch(() => '{"files":{}}')) as { files: Record<string, { line: number; complete: boolean }> };
      return state.files[file];
    };

    const first = startCli(args);
    // Killed as soon as the resume file shows a batch done and the file not finished.
    await expect
      .poll(
        async () => {
          const progress = await progressOf();
          return progress !== undefined && progress.line > 0 && !progress.complete;
        },
        { interval: 5, timeout: 60_000 },
      )
      .toBe(true);
    first.kill();
    expect(await first.exited).toBeNull();
    // One record per line, so the recorded line is the count of records acknowledged. The batch
    // the killed run had in flight may still be stored by the node after this point (its
    // request outlives the client), so the store is compared with the resume file, not counted
    // once and taken as exact.
    const recorded = (await progressOf())!;
    expect(recorded.complete).toBe(false);
    const storedBeforeResume = (await storedIds(node)).length;
    expect(storedBeforeResume).toBeGreaterThanOrEqual(recorded.line);
    expect(storedBeforeResume).toBeLessThan(total);

    const second = startCli(args);
    expect(await second.exited).toBe(0);
    const summary = /imported (\d+), duplicates (\d+), refused (\d+)/.exec(second.output());
    expect(summary, second.output()).not.toBeNull();
    const [imported, duplicates, refused] = summary!.slice(1).map(Number) as [number, number, number];
    expect(refused).toBe(0);
    // The second run starts right after the recorded line: what the killed run sent after it
    // (at most its one batch in flight) comes back as duplicates, and nothing before it is sent.
    expect(imported + duplicates).toBe(total - recorded.line);
    expect(duplicates).toBeLessThanOrEqual(500);
    const ids = await storedIds(node);
    expect(ids).toHaveLength(total);
    expect(new Set(ids).size).toBe(total);

    // A finished, unchanged file is skipped without being read.
    const third = startCli(args);
    expect(await third.exited).toBe(0);
    expect(third.output()).toContain('imported 0, duplicates 0, refused 0');
  });

  it('reads standard input, gzip-compressed or not', async () => {
    const node = await startNode();
    const log = await readFile(join(FIXTURES, 'gravitino', 'logs', 'pod-a', 'gravitino_audit.log'));
    const plain = startCli(['--format', 'gravitino', '--url', node.url, '--token', INGEST_TOKEN, '-'], log);
    expect(await plain.exited).toBe(3);
    expect(plain.output()).toContain('imported 27, duplicates 0, refused 4');
    expect(plain.output()).toContain('-:24: expected 8 tab-separated fields');
    const gz = startCli(['--format', 'gravitino', '--url', node.url, '--token', INGEST_TOKEN, '-'], gzipSync(log));
    expect(await gz.exited).toBe(3);
    expect(gz.output()).toContain('imported 0, duplicates 27, refused 4');
  });

  it('exits 2 on usage errors, naming the problem, and sends nothing', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const resumeOfOtherFormat = join(dir, 'other.json');
    await writeFile(resumeOfOtherFormat, JSON.stringify({ version: 1, format: 'las', files: {} }));
    const fixture = join(FIXTURES, 'lho', 'logs');
    const cases: Array<[string[], RegExp]> = [
      [['--url', node.url, '--token', INGEST_TOKEN, fixture], /--format is required/],
      [['--format', 'ranger', '--url', node.url, '--token', INGEST_TOKEN, fixture], /--format must be one of gravitino, lakekeeper, lho, las: ranger/],
      [['--format', 'lho', '--url', node.url, '--token', INGEST_TOKEN], /name at least one PATH/],
      [['--format', 'lho', '--url', node.url, fixture], /an ingest token is needed/],
      [['--format', 'lho', '--url', 'ftp://x', '--token', INGEST_TOKEN, fixture], /--url must be an http\(s\) URL: ftp:\/\/x/],
      [['--format', 'lho', '--url', node.url, '--token', INGEST_TOKEN, '--time-zone', 'Mars/Base', fixture], /--time-zone must be .*: Mars\/Base/],
      [['--format', 'lho', '--url', node.url, '--token', INGEST_TOKEN, '--resume-file', join(dir, 'r.json'), '-'], /--resume-file cannot resume standard input/],
      [['--format', 'lho', '--url', node.url, '--token', INGEST_TOKEN, join(dir, 'missing.log')], /cannot read .*missing\.log: ENOENT/],
      [['--format', 'lho', '--url', node.url, '--token', INGEST_TOKEN, '--resume-file', resumeOfOtherFormat, fixture], /records an import of --format las, not lho/],
      [['--format', 'lho', '--bogus', fixture], /Unknown option '--bogus'/],
    ];
    // Through the process for the exit status; in-process for the rest (each process start costs seconds here).
    for (const [i, [args, message]] of cases.entries()) {
      if (i < 2) {
        const child = startCli(args);
        expect(await child.exited, args.join(' ')).toBe(2);
        expect(child.output()).toMatch(message);
      } else {
        let stderr = '';
        const code = await importCommand(args, {}, { stdout: { write: () => undefined }, stderr: { write: (t: string) => (stderr += t) } });
        expect(code, args.join(' ')).toBe(2);
        expect(stderr).toMatch(message);
      }
    }
    expect(await allEvents(node)).toEqual([]);
  });

  it('exits 1 naming the node when it cannot be reached or refuses the token', async () => {
    const node = await startNode();
    const refused = await runImport(node, ['--format', 'lho', '--token', 'wrong', join(FIXTURES, 'lho', 'logs')]);
    // runImport puts its own --token first; the later one wins.
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/refused the token \(401\)/);
    const url = node.url;
    await node.close();
    const retries: number[] = [];
    const unreachable = await runImport({ url } as never, ['--format', 'lho', join(FIXTURES, 'lho', 'logs')], { attemptsMax: 3, sleep: async (ms) => void retries.push(ms) });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(new RegExp(`${url.replace(/[.]/g, '\\.')}/v1/api/audit: no answer after 3 attempts`));
    expect(retries).toEqual([500, 1000]);
  });

  it('splits a batch the node finds too large, and refuses only an event that is too large on its own', async () => {
    const node = await startNode({ 'auditlake.http.body.limit.bytes': '6000' });
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.7');
    const lines = lhoFile(40).trimEnd().split('\n');
    lines.splice(20, 0, JSON.stringify({ timestamp: 1_780_300_000_000, userName: 'big', action: 'RECONFIGURE', outcome: 'SUCCESS', message: 'x'.repeat(8000) }));
    await writeFile(file, lines.join('\n') + '\n');
    const run = await runImport(node, ['--format', 'lho', file]);
    expect(run.stdout).toBe('imported 40, duplicates 0, refused 1\n');
    expect(run.stderr).toContain(`${file}:21: the event is larger than the node accepts in one request`);
    expect(run.code).toBe(3);
  });
});

describe('import progress', () => {
  it('writes a line every interval without a terminal, and a bar redrawn in place on one', () => {
    let now = 0;
    const lines: string[] = [];
    const progress = new ImportProgress({ out: { write: (t: string) => lines.push(t), isTTY: false }, totalBytes: 1000, lineIntervalMs: 5000, now: () => now });
    progress.update({ bytesRead: 100, records: 10, sent: 0, file: 'a.log' });
    now = 4999;
    progress.update({ bytesRead: 200, records: 20, sent: 0, file: 'a.log' });
    expect(lines).toEqual([]);
    now = 5000;
    progress.update({ bytesRead: 500, records: 1500, sent: 1000, file: 'a.log' });
    expect(lines).toEqual(['import: 1,500 records read (50% of the input), 1,000 sent; reading a.log\n']);

    const tty: string[] = [];
    const bar = new ImportProgress({ out: { write: (t: string) => tty.push(t), isTTY: true }, totalBytes: 1000, now: () => now });
    now += 100;
    bar.update({ bytesRead: 500, records: 3, sent: 0, file: 'b.log' });
    expect(tty.at(-1)).toMatch(/^\r\x1b\[K\[#{15}\.{15}\]  50% 3 records, 0 sent {2}b\.log$/);
    bar.note('b.log:7: not valid JSON');
    expect(tty.slice(-3)).toEqual(['\r\x1b[K', 'b.log:7: not valid JSON\n', expect.stringMatching(/^\r\x1b\[K\[/) as unknown]);
    bar.finish();
    expect(tty.at(-1)).toBe('\r\x1b[K');
  });
});

describe('import: operands after --', () => {
  it('imports a file named --help when it follows --, instead of printing the usage', async () => {
    const node = await startNode();
    const dir = await tempDir();
    await writeFile(join(dir, '--help'), lhoFile(3));
    const child = startCli(['--format', 'lho', '--url', node.url, '--token', INGEST_TOKEN, '--', '--help'], undefined, dir);
    expect(await child.exited).toBe(0);
    expect(child.output()).toContain('imported 3, duplicates 0, refused 0');
    expect(await allEvents(node, '&engine=lho')).toHaveLength(3);
  });
});
