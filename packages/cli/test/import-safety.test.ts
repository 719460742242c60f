// Goal: through a real node, `auditlake import` loses no record to a node answer that is not about records (429, 404, …), a replaced file, a half-written last line, a truncated gzip file, a byte-order mark or a JSON array of records, and shows no password given in --url; one import at a time holds a resume file.
import { appendFile, readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { constants, gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ResumeFile } from '../src/resume-file.js';
import { allEvents, FIXTURES, runImport, startNode, tempDir } from './import-node.js';

/** LHO records `from`..`to` (exclusive), one per line, each a distinct event. */
function lhoLines(from: number, to: number, user = 'u'): string[] {
  const lines: string[] = [];
  for (let i = from; i < to; i++) lines.push(JSON.stringify({ timestamp: 1_780_300_000_000 + i, userName: `${user}${i}`, action: 'VIEW_TASK', outcome: 'SUCCESS', taskId: `task-${i}` }));
  return lines;
}

async function progressOf(resume: string, file: string): Promise<{ line: number; complete: boolean } | undefined> {
  const state = JSON.parse(await readFile(resume, 'utf8').catch(() => '{"files":{}}')) as { files: Record<string, { line: number; complete: boolean }> };
  return state.files[file];
}

describe('import: node answers that are not about records', () => {
  it('fails with exit 1 naming the status on a 404 (a wrong --url prefix), keeps the resume point, and a later run imports everything', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.1');
    await writeFile(file, lhoLines(0, 5).join('\n') + '\n');
    const resume = join(dir, 'progress.json');
    const wrong = await runImport(node, ['--format', 'lho', '--url', `${node.url}/auditlake`, '--resume-file', resume, file]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/answered 404/);
    expect(wrong.stdout).toBe('');
    expect((await progressOf(resume, file))?.complete ?? false).toBe(false);

    const right = await runImport(node, ['--format', 'lho', '--resume-file', resume, file]);
    expect(right.stdout).toBe('imported 5, duplicates 0, refused 0\n');
    expect(right.code).toBe(0);
    expect(await allEvents(node, '&engine=lho')).toHaveLength(5);
  });

  it('waits out a 429 for its Retry-After and sends again; fails with exit 1 when it goes on, keeping the resume point', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.2');
    await writeFile(file, lhoLines(0, 3).join('\n') + '\n');
    const resume = join(dir, 'progress.json');
    const tooMany = (): Response => new Response(JSON.stringify({ status: 'error', error: 'too many requests' }), { status: 429, headers: { 'retry-after': '3' } });

    let limited = 2;
    const pauses: number[] = [];
    const recovering = await runImport(node, ['--format', 'lho', '--resume-file', resume, file], {
      fetch: async (input, init) => (limited-- > 0 ? tooMany() : fetch(input, init)),
      sleep: async (ms) => void pauses.push(ms),
    });
    expect(recovering.stdout).toBe('imported 3, duplicates 0, refused 0\n');
    expect(recovering.code).toBe(0);
    expect(pauses).toEqual([3000, 3000]);

    const other = join(dir, 'clo-audit.log.3');
    await writeFile(other, lhoLines(3, 6).join('\n') + '\n');
    const always = await runImport(node, ['--format', 'lho', '--resume-file', resume, other], { fetch: async () => tooMany(), sleep: async () => undefined });
    expect(always.code).toBe(1);
    expect(always.stderr).toMatch(/answered 429 \(too many requests\) 8 times/);
    expect((await progressOf(resume, other))?.complete ?? false).toBe(false);
    const later = await runImport(node, ['--format', 'lho', '--resume-file', resume, other]);
    expect(later.stdout).toBe('imported 3, duplicates 0, refused 0\n');
  });
});

describe('import --resume-file: refusals before a stop', () => {
  it('counts the records refused before a failed run in the summary of the run that finishes the import, each once', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.r');
    const lines = lhoLines(0, 600);
    // Malformed: one inside the first batch's lines, one after them (read again by the resumed run).
    lines[9] = 'not json at line 10';
    lines[549] = 'not json at line 550';
    await writeFile(file, lines.join('\n') + '\n');
    const resume = join(dir, 'progress.json');
    const args = ['--format', 'lho', '--resume-file', resume, file];

    // The node refuses the first batch's 4th event (line 4), takes the rest, then is gone (404).
    let requests = 0;
    const failing = await runImport(node, args, {
      fetch: async (input, init) => {
        if (init?.method !== 'POST') return fetch(input, init);
        requests++;
        if (requests === 1) return new Response(JSON.stringify({ status: 'error', error: 'events[3]: userId must not be empty' }), { status: 400 });
        if (requests === 3) return new Response('{"error":"not found"}', { status: 404 });
        return fetch(input, init);
      },
    });
    expect(failing.code).toBe(1);
    expect(failing.stderr).toContain(`${file}:4: refused by the node: 400 events[3]`);
    expect(failing.stderr).toContain(`${file}:10: `);
    expect((await progressOf(resume, file))?.line).toBe(501);

    // Lines 4 and 10 are before the resume point: not read again, yet refused by this import.
    const resumed = await runImport(node, args);
    expect(resumed.stdout).toBe('imported 98, duplicates 0, refused 3\n');
    expect(resumed.code).toBe(3);
    expect(resumed.stderr).toContain(`${file}:550: `);
    expect(resumed.stderr).not.toContain(`${file}:10: `);
    expect(await allEvents(node, '&engine=lho')).toHaveLength(597);

    // A finished import starts afresh: the next run reports only its own refusals.
    const again = await runImport(node, args);
    expect(again).toMatchObject({ code: 0, stdout: 'imported 0, duplicates 0, refused 0\n' });
  });
});

describe('import --resume-file: a record larger than a batch right after the resume point', () => {
  it('keeps the resume point where the run started when that record is the first sent and the run stops: the next run sends nothing twice', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.big');
    const lines = lhoLines(0, 600);
    // Line 501 (the first after the first batch) is larger than a batch's bytes on its own.
    lines[500] = JSON.stringify({ timestamp: 1_780_300_000_000, userName: 'big', action: 'VIEW_TASK', outcome: 'SUCCESS', taskId: 'x'.repeat(3 * 1024 * 1024) });
    await writeFile(file, lines.join('\n') + '\n');
    const resume = join(dir, 'progress.json');
    const args = ['--format', 'lho', '--resume-file', resume, file];
    const goneAfter = (posts: number) => {
      let requests = 0;
      return async (input: string | URL | Request, init?: RequestInit) => (init?.method === 'POST' && ++requests > posts ? new Response('{"error":"not found"}', { status: 404 }) : fetch(input, init));
    };
    // The first batch (lines 1..500) is stored, then the node is gone.
    expect((await runImport(node, args, { fetch: goneAfter(1) })).code).toBe(1);
    expect((await progressOf(resume, file))?.line).toBe(500);
    // Resumed: its first record is the large one, and the node is gone again before it is stored.
    expect((await runImport(node, args, { fetch: goneAfter(0) })).code).toBe(1);
    expect((await progressOf(resume, file))?.line).toBe(500);
    // The import finishes without sending lines 1..500 again.
    const done = await runImport(node, args);
    expect(done.stdout).toMatch(/^imported \d+, duplicates 0, refused \d+\n$/);
    expect(await allEvents(node, '&engine=lho')).toHaveLength(600);
  });
});

describe('import: a record with megabytes in one field', () => {
  it('is imported with the field cut as the node cuts it, not sent past the node\'s body limit', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.wide');
    // 3 million CJK characters: 9 MB of UTF-8 in one field, past the node's 8 MiB body limit, within the line limit.
    const lines = lhoLines(0, 3);
    lines[1] = JSON.stringify({ timestamp: 1_780_300_000_001, userName: 'wide', action: 'VIEW_TASK', outcome: 'SUCCESS', taskId: 'task-wide', note: '中'.repeat(3_000_000) });
    await writeFile(file, lines.join('\n') + '\n');
    const result = await runImport(node, ['--format', 'lho', file]);
    expect(result).toMatchObject({ code: 0, stdout: 'imported 3, duplicates 0, refused 0\n' });
    const wide = (await allEvents(node, '&engine=lho')).find((e) => e.userId === 'wide');
    expect(wide?.details).toMatch(/…\[truncated by auditlake: \d+ bytes\]$/);
    expect(Buffer.byteLength(wide!.details)).toBeLessThanOrEqual(16 * 1024);
    // Imported again: the same events, duplicates.
    expect((await runImport(node, ['--format', 'lho', file])).stdout).toBe('imported 0, duplicates 3, refused 0\n');

    // A required field of white space alone past its limit is still refused as empty, not cut and stored.
    const blank = join(dir, 'clo-audit.log.blank');
    await writeFile(blank, JSON.stringify({ timestamp: 1_780_300_000_002, userName: ' '.repeat(2_000), action: 'VIEW_TASK', outcome: 'SUCCESS', taskId: 'task-blank' }) + '\n');
    const refused = await runImport(node, ['--format', 'lho', blank]);
    expect(refused).toMatchObject({ code: 3, stdout: 'imported 0, duplicates 0, refused 1\n' });
    expect(refused.stderr).toContain('userId must not be empty');
  });
});

describe('import --resume-file: a resume file that does not describe the files', () => {
  it('refuses a resume point past the end of its file (exit 2, naming both), recording nothing; and an entry this command did not write', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.30');
    await writeFile(file, lhoLines(0, 10).join('\n') + '\n');
    const resume = join(dir, 'progress.json');
    const args = ['--format', 'lho', '--resume-file', resume, file];
    expect((await runImport(node, args)).stdout).toBe('imported 10, duplicates 0, refused 0\n');
    const state = JSON.parse(await readFile(resume, 'utf8')) as { files: Record<string, { line: unknown; complete: boolean }> };
    state.files[file] = { ...state.files[file]!, line: 999_999, complete: false };
    await writeFile(resume, JSON.stringify(state));
    const tampered = await runImport(node, args);
    expect(tampered.stderr).toBe(`auditlake import: the resume file ${resume} records ${file} as done up to line 999999, but the file has 10 lines: that entry is not one an import of this file wrote; remove the entry (or the resume file) to import the file from its first line\n`);
    expect(tampered.code).toBe(2);
    expect(await progressOf(resume, file)).toMatchObject({ line: 999_999, complete: false });

    state.files[file] = { ...state.files[file], line: 'abc' };
    await writeFile(resume, JSON.stringify(state));
    const unreadable = await runImport(node, args);
    expect(unreadable.stderr).toContain(`the resume file ${resume} has an entry for ${file} that this command did not write (line "abc")`);
    expect(unreadable.code).toBe(2);
    expect(await allEvents(node, '&engine=lho')).toHaveLength(10);
  });

  it('never imports the resume file (or its temporary copy or lock) kept in the directory being imported, and refuses it named as a PATH', async () => {
    const node = await startNode();
    const dir = await tempDir();
    await writeFile(join(dir, 'clo-audit.log.31'), lhoLines(0, 3).join('\n') + '\n');
    const resume = join(dir, 'resume.json');
    await writeFile(`${resume}.tmp`, '{"left":"by a killed run"}\n');
    // A killed run's lock: JSON like a record, and taken over by the run.
    await writeFile(`${resume}.lock`, `${JSON.stringify({ pid: 2 ** 30, token: 'killed' })}\n`);
    const args = ['--format', 'lho', '--resume-file', resume, dir];
    const first = await runImport(node, args);
    expect(first.stdout).toBe('imported 3, duplicates 0, refused 0\n');
    await appendFile(join(dir, 'clo-audit.log.31'), lhoLines(3, 4)[0] + '\n');
    const second = await runImport(node, args);
    expect(second.stderr).toBe('');
    expect(second.stdout).toBe('imported 1, duplicates 0, refused 0\n');
    expect(second.code).toBe(0);
    expect(Object.keys((JSON.parse(await readFile(resume, 'utf8')) as { files: object }).files)).toEqual([join(dir, 'clo-audit.log.31')]);
    // Released by each run.
    await expect(readFile(`${resume}.lock`)).rejects.toThrow(/ENOENT/);

    const named = await runImport(node, ['--format', 'lho', '--resume-file', resume, resume]);
    expect(named.stderr).toContain(`${resume} is the resume file (--resume-file): name the files to import, not it`);
    expect(named.code).toBe(2);
  });
});

describe('import --resume-file: one import at a time', () => {
  it('refuses (exit 2, nothing sent) an import whose resume file another import holds, naming it; one after it goes ahead', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log');
    await writeFile(file, lhoLines(0, 3).join('\n') + '\n');
    const resume = join(dir, 'resume.json');
    const other = await ResumeFile.open(resume, 'lho');
    const refused = await runImport(node, ['--format', 'lho', '--resume-file', resume, file]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`the resume file ${resume} is in use by another import (process ${process.pid}`);
    expect(refused.stdout).toBe('');
    expect(await allEvents(node)).toEqual([]);
    // The holder's lock is its own still.
    expect(JSON.parse(await readFile(`${resume}.lock`, 'utf8'))).toMatchObject({ pid: process.pid });
    await other.close();
    const after = await runImport(node, ['--format', 'lho', '--resume-file', resume, file]);
    expect(after.stdout).toBe('imported 3, duplicates 0, refused 0\n');
  });
});

describe('import --resume-file: a file replaced under the same name', () => {
  it('imports a rotated file of the same or a larger size from its first line, saying so, and still resumes one that was appended to', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log');
    const resume = join(dir, 'progress.json');
    const args = ['--format', 'lho', '--resume-file', resume, file];
    await writeFile(file, lhoLines(0, 5, 'a').join('\n') + '\n');
    expect((await runImport(node, args)).stdout).toBe('imported 5, duplicates 0, refused 0\n');

    // Same size, other records (and a later modification time).
    await writeFile(file, lhoLines(0, 5, 'b').join('\n') + '\n');
    await utimes(file, new Date(), new Date(Date.now() + 60_000));
    const sameSize = await runImport(node, args);
    expect(sameSize.stdout).toBe('imported 5, duplicates 0, refused 0\n');
    expect(sameSize.stderr).toContain(`${file} is not the file the resume file recorded (its first bytes differ); importing it from the start`);

    // Larger, other records.
    await writeFile(file, lhoLines(0, 8, 'c').join('\n') + '\n');
    const larger = await runImport(node, args);
    expect(larger.stdout).toBe('imported 8, duplicates 0, refused 0\n');

    // The same file, appended to: only the new records are sent.
    await appendFile(file, lhoLines(8, 10, 'c').join('\n') + '\n');
    const appended = await runImport(node, args);
    expect(appended.stdout).toBe('imported 2, duplicates 0, refused 0\n');
    expect(appended.stderr).not.toContain('importing it from the start');
    expect(await allEvents(node, '&engine=lho')).toHaveLength(20);
  });
});

describe('import: the bytes at the edges of a file', () => {
  it('leaves a last line without a newline (its writer mid-line) for the next run, which imports it once complete', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.9');
    const resume = join(dir, 'progress.json');
    const args = ['--format', 'lho', '--resume-file', resume, file];
    const lines = lhoLines(0, 5);
    const fourth = lines[3]!;
    await writeFile(file, lines.slice(0, 3).join('\n') + '\n' + fourth.slice(0, 30));
    const first = await runImport(node, args);
    expect(first.stdout).toBe('imported 3, duplicates 0, refused 0\n');
    expect(first.code).toBe(0);
    expect(first.stderr).toContain(`last line of ${file} (line 4) has no newline yet: left for the next run`);
    expect(await progressOf(resume, file)).toMatchObject({ line: 3, complete: false });

    await appendFile(file, fourth.slice(30) + '\n' + lines[4] + '\n');
    const second = await runImport(node, args);
    expect(second.stdout).toBe('imported 2, duplicates 0, refused 0\n');
    expect(second.stderr).not.toContain('no newline yet');
    expect(await allEvents(node, '&engine=lho')).toHaveLength(5);
  });

  it('imports a last line without a newline that ends its records (a file written at once: a compact array, a pretty-printed record, a Gravitino line), leaving only what may still be written', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const resume = join(dir, 'progress.json');
    const compact = join(dir, 'array.json');
    await writeFile(compact, '[' + lhoLines(0, 4).join(',') + ']');
    const pretty = join(dir, 'pretty.json');
    await writeFile(pretty, JSON.stringify(JSON.parse(lhoLines(4, 5)[0]!), null, 2));
    const ndjson = join(dir, 'clo-audit.log.40');
    await writeFile(ndjson, lhoLines(5, 7).join('\n'));
    const run = await runImport(node, ['--format', 'lho', '--resume-file', resume, compact, pretty, ndjson]);
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('imported 7, duplicates 0, refused 0\n');
    expect(run.code).toBe(0);
    expect(await progressOf(resume, compact)).toMatchObject({ line: 1, complete: true });
    expect(await progressOf(resume, ndjson)).toMatchObject({ line: 2, complete: true });

    // An array whose end is not written yet, and a record ending in a comma: left, as a writer mid-line.
    const open = join(dir, 'open-array.json');
    await writeFile(open, '[' + lhoLines(10, 12).join(','));
    const comma = join(dir, 'comma.json');
    await writeFile(comma, '[\n' + lhoLines(12, 13)[0] + ',');
    const left = await runImport(node, ['--format', 'lho', open, comma]);
    expect(left.stdout).toBe('imported 0, duplicates 0, refused 0\n');
    expect(left.stderr).toContain(`last line of ${open} (line 1) has no newline yet: left for the next run`);
    expect(left.stderr).toContain(`last line of ${comma} (line 2) has no newline yet: left for the next run`);

    // Gravitino: a whole line without a newline imports; seven of its eight fields (a writer mid-line) are left.
    const line = '[2026-12-01 09:00:00.000]\talice\tLOAD_TABLE\tml.cat.s.t1\tSUCCESS\tHTTP\t10.0.0.1\t{http.status=200}';
    const whole = join(dir, 'gravitino_audit.log');
    await writeFile(whole, line);
    const partial = join(dir, 'gravitino_audit.log.1');
    await writeFile(partial, line.slice(0, line.lastIndexOf('\t') - 2));
    const gravitino = await runImport(node, ['--format', 'gravitino', whole, partial]);
    expect(gravitino.stdout).toBe('imported 1, duplicates 0, refused 0\n');
    expect(gravitino.stderr).toBe(`auditlake import: last line of ${partial} (line 1) has no newline yet: left for the next run\n`);
  });

  it('leaves a pretty-printed JSON record whose last line has no newline yet for the next run, not reporting it cut short', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'lakekeeper.json');
    const resume = join(dir, 'progress.json');
    const args = ['--format', 'lakekeeper', '--resume-file', resume, file];
    const line8 = (await readFile(join(FIXTURES, 'lakekeeper', 'logs', 'lakekeeper.log'), 'utf8')).split('\n')[7]!;
    const record = JSON.stringify(JSON.parse(line8), null, 2);
    const cut = record.length - 20;
    await writeFile(file, record.slice(0, cut));
    const first = await runImport(node, args);
    expect(first.stdout).toBe('imported 0, duplicates 0, refused 0\n');
    expect(first.stderr).toContain(`last line of ${file}`);

    await appendFile(file, record.slice(cut) + '\n');
    const second = await runImport(node, args);
    expect(second.stdout).toBe('imported 1, duplicates 0, refused 0\n');
    expect(second.code).toBe(0);
  });

  it('imports what a truncated gzip file holds before its cut, reports it cut short (exit 3) and goes on with the next file', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const cutFile = join(dir, 'clo-audit.log.12.gz');
    const truncated = gzipSync(lhoLines(0, 2000).join('\n') + '\n').subarray(0, 9000);
    await writeFile(cutFile, truncated);
    const whole = (gunzipSync(truncated, { finishFlush: constants.Z_SYNC_FLUSH }).toString('utf8').match(/\n/g) ?? []).length;
    expect(whole).toBeGreaterThan(0);
    expect(whole).toBeLessThan(2000);
    const next = join(dir, 'clo-audit.log.13');
    await writeFile(next, lhoLines(5000, 5003).join('\n') + '\n');
    const resume = join(dir, 'progress.json');

    const run = await runImport(node, ['--format', 'lho', '--resume-file', resume, cutFile, next]);
    expect(run.stderr).toContain(`${cutFile}: gzip ends early after line ${whole}\n`);
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(run.stdout).toBe(`imported ${whole + 3}, duplicates 0, refused 1\n`);
    expect(run.code).toBe(3);
    expect(await allEvents(node, '&engine=lho')).toHaveLength(whole + 3);
    expect(await progressOf(resume, cutFile)).toMatchObject({ line: whole, complete: false });
    expect(await progressOf(resume, next)).toMatchObject({ line: 3, complete: true });
  });

  it('reads a file that starts with a UTF-8 byte-order mark like one without', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.10');
    await writeFile(file, '\uFEFF' + lhoLines(0, 3).join('\n') + '\n');
    const run = await runImport(node, ['--format', 'lho', file]);
    expect(run.stdout).toBe('imported 3, duplicates 0, refused 0\n');
    expect(run.code).toBe(0);
  });
});

describe('import: bytes that are not UTF-8', () => {
  /** An LHO record with `userName` as given, encoded as Latin-1 (ISO 8859-1). */
  const latin1 = (userName: string, i = 0): Buffer => Buffer.from(JSON.stringify({ timestamp: 1_780_300_000_000 + i, userName, action: 'DROP_TABLE', outcome: 'SUCCESS' }) + '\n', 'latin1');

  it('refuses a Latin-1 line by file:line and byte offset, replacing nothing, so José and Josè are not one record; the lines around it import, the resume point passes it', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const x = join(dir, 'latin1-x.log');
    const y = join(dir, 'latin1-y.log');
    await writeFile(x, Buffer.concat([Buffer.from(lhoLines(0, 1)[0] + '\n'), latin1('José', 1), Buffer.from(lhoLines(2, 3)[0] + '\n')]));
    await writeFile(y, latin1('Josè', 1));
    const resume = join(dir, 'progress.json');
    const run = await runImport(node, ['--format', 'lho', '--resume-file', resume, x, y]);
    const at = Buffer.byteLength(lhoLines(0, 1)[0]! + '\n') + latin1('José', 1).indexOf(0xe9);
    expect(run.stderr).toContain(`${x}:2: not valid UTF-8: byte ${latin1('José', 1).indexOf(0xe9)} of line 2 (byte offset ${at} of the file) is not part of a UTF-8 character`);
    expect(run.stderr).toContain(`${y}:1: not valid UTF-8: byte ${latin1('Josè', 1).indexOf(0xe8)} of line 1 (byte offset ${latin1('Josè', 1).indexOf(0xe8)} of the file)`);
    expect(run.stdout).toBe('imported 2, duplicates 0, refused 2\n');
    expect(run.code).toBe(3);
    expect((await allEvents(node, '&engine=lho')).map((e) => e.userId).sort()).toEqual(['u0', 'u2']);
    expect(await progressOf(resume, x)).toMatchObject({ line: 3, complete: true });
    expect(await progressOf(resume, y)).toMatchObject({ line: 1, complete: true });
  });

  it('imports characters split between read chunks, and refuses a pretty-printed record with a bad byte once', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const split = join(dir, 'clo-audit.log.20');
    // The first 64 KiB read chunk ends inside a 3-byte character of the record after a blank line.
    const message = '€'.repeat(4_000);
    const recordLine = JSON.stringify({ timestamp: 1_780_300_000_000, userName: 'euro', action: 'LOGIN', outcome: 'SUCCESS', message }) + '\n';
    const blank = 65_536 - recordLine.indexOf('€') - 1 - 3 * 100 - 1;
    await writeFile(split, ' '.repeat(blank) + '\n' + recordLine);
    expect((65_536 - blank - 1 - recordLine.indexOf('€')) % 3).not.toBe(0);
    const splitRun = await runImport(node, ['--format', 'lho', split]);
    expect(splitRun.stdout).toBe('imported 1, duplicates 0, refused 0\n');
    const [stored] = await allEvents(node, '&user=euro');
    expect((JSON.parse(stored!.details) as { message: string }).message).toBe(message);

    const pretty = join(dir, 'clo-audit.log.21');
    const record = Buffer.from(JSON.stringify({ timestamp: 1_780_300_000_001, userName: 'pretty', action: 'LOGIN', outcome: 'SUCCESS', message: 'Jos\u00e9' }, null, 2) + '\n', 'latin1');
    await writeFile(pretty, Buffer.concat([record, Buffer.from(lhoLines(5, 6)[0] + '\n')]));
    const prettyRun = await runImport(node, ['--format', 'lho', pretty]);
    expect(prettyRun.stderr.match(/not valid UTF-8/g)).toHaveLength(1);
    expect(prettyRun.stderr).toContain(`${pretty}:1: not valid UTF-8: byte `);
    expect(prettyRun.stderr).toContain('of line 6 (');
    expect(prettyRun.stdout).toBe('imported 1, duplicates 0, refused 1\n');
  });
});

describe('import: JSON arrays of records', () => {
  it('imports every element of an array whose first line is `[{`, pretty-printed or compact, for every JSON format', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const source = (await readFile(join(FIXTURES, 'lakekeeper', 'logs', 'lakekeeper.log'), 'utf8')).split('\n');
    const [first, second, third] = [source[7]!, source[8]!, source[9]!].map((line) => JSON.parse(line) as object);
    const pretty = join(dir, 'lakekeeper-pretty.json');
    await writeFile(pretty, '[' + JSON.stringify(first, null, 2) + ',\n' + JSON.stringify(second, null, 2) + ']\n');
    const prettyRun = await runImport(node, ['--format', 'lakekeeper', pretty]);
    expect(prettyRun.stdout).toBe('imported 2, duplicates 0, refused 0\n');
    expect(prettyRun.stderr).not.toMatch(/skipped/);

    const compact = join(dir, 'lakekeeper-compact.json');
    await writeFile(compact, JSON.stringify([first, second, third]) + '\n');
    const compactRun = await runImport(node, ['--format', 'lakekeeper', compact]);
    expect(compactRun.stdout).toBe('imported 1, duplicates 2, refused 0\n');
    expect(compactRun.code).toBe(0);
    expect(await allEvents(node, '&engine=lakekeeper')).toHaveLength(3);

    const lho = join(dir, 'clo-audit.log.11');
    await writeFile(lho, '[' + lhoLines(0, 4).join(',') + ']\n');
    const lhoRun = await runImport(node, ['--format', 'lho', lho]);
    expect(lhoRun.stdout).toBe('imported 4, duplicates 0, refused 0\n');
    expect(lhoRun.code).toBe(0);
  });
});

describe('import: records sharing a line, and records that cannot be written out', () => {
  it('resumes a compact JSON array on one line after a run stopped between its batches, losing none of its records', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.21');
    await writeFile(file, '[' + lhoLines(0, 1200).join(',') + ']\n');
    const resume = join(dir, 'progress.json');
    // The first batch (500) is stored, then the node answers 404: the run stops.
    let answered = 0;
    const stopped = await runImport(node, ['--format', 'lho', '--resume-file', resume, file], {
      fetch: async (input, init) => (answered++ === 0 ? fetch(input, init) : new Response('{}', { status: 404 })),
    });
    expect(stopped.code).toBe(1);
    expect(await allEvents(node, '&engine=lho')).toHaveLength(500);
    // The line holds records not sent yet: the resume point stays before it.
    expect((await progressOf(resume, file))?.line).toBe(0);
    const resumed = await runImport(node, ['--format', 'lho', '--resume-file', resume, file]);
    expect(resumed.stdout).toBe('imported 700, duplicates 500, refused 0\n');
    expect(resumed.code).toBe(0);
    expect(await allEvents(node, '&engine=lho')).toHaveLength(1200);
  });

  it('refuses a pretty-printed record past the line limit once, passing over its lines, and imports the records after it', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.23');
    const long = JSON.stringify({ timestamp: 1_780_300_000_900, userName: 'long', action: 'VIEW_TASK', outcome: 'SUCCESS', taskId: 't', tags: Array.from({ length: 15_000 }, (_, i) => `t${i}`) }, null, 1);
    await writeFile(file, [...lhoLines(0, 2), long, ...lhoLines(2, 4)].join('\n') + '\n');
    const run = await runImport(node, ['--format', 'lho', file]);
    expect(run.stdout).toBe('imported 4, duplicates 0, refused 1\n');
    expect(run.stderr).toContain(`${file}:3: the record is longer than 10000 lines`);
    expect(run.code).toBe(3);
    expect(await allEvents(node, '&engine=lho')).toHaveLength(4);
  });

  it('refuses a record nested too deep to write out, naming its line, and imports the rest', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.22');
    const deep = '{"timestamp":1780300000500,"userName":"deep","action":"VIEW_TASK","outcome":"SUCCESS","taskId":' + '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000) + '}';
    await writeFile(file, [...lhoLines(0, 2), deep, ...lhoLines(2, 4)].join('\n') + '\n');
    const run = await runImport(node, ['--format', 'lho', file]);
    expect(run.stdout).toBe('imported 4, duplicates 0, refused 1\n');
    expect(run.stderr).toContain(`${file}:3: cannot be read as a record: Maximum call stack size exceeded`);
    expect(run.code).toBe(3);
  });
});

describe('import: credentials in --url', () => {
  it('shows the URL with its user and password masked in every retry note and in the failure', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'clo-audit.log.14');
    await writeFile(file, lhoLines(0, 2).join('\n') + '\n');
    const secretUrl = node.url.replace('http://', 'http://bob:s3cr3t@');
    const refused = await runImport(node, ['--format', 'lho', '--url', secretUrl, file], { sleep: async () => undefined });
    expect(refused.code).toBe(1);
    expect(refused.stderr.match(/retrying in/g)).toHaveLength(7);
    expect(refused.stderr).toContain(`auditlake import: ${node.url.replace('http://', 'http://***@')} could not take the batch`);
    expect(refused.stderr).toContain(`${node.url.replace('http://', 'http://***@')}/v1/api/audit: no answer after 8 attempts`);

    const failing = await runImport(node, ['--format', 'lho', '--url', secretUrl, file], {
      fetch: async () => new Response('{"error":"busy"}', { status: 503 }),
      sleep: async () => undefined,
    });
    expect(failing.code).toBe(1);
    expect(failing.stderr).toContain('(503 busy); retrying in');
    for (const output of [refused, failing]) {
      expect(output.stderr).not.toContain('s3cr3t');
      expect(output.stderr).not.toContain('bob');
    }
  });
});
