// Goal: the export's byte sink leaves nothing behind when its path cannot become the export, replaces nothing but a regular file, renames only the temporary file it made itself, keeps no listener per write or per export on a stream that outlives it, and makes its file owner-only and on disk (file, then name) before it counts as written.
import { execFileSync } from 'node:child_process';
import { chmod, lstat, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { openSink } from '../src/export/byte-sink.js';
import { tempDir } from './import-node.js';

/** What the sink asks of the file system, in order: every fsync (by path) and rename. */
const fsCalls = vi.hoisted(() => [] as string[]);
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs/promises')>();
  return {
    ...fs,
    open: async (...args: Parameters<typeof fs.open>) => {
      const handle = await fs.open(...args);
      const sync = handle.sync.bind(handle);
      handle.sync = async () => {
        fsCalls.push(`sync ${String(args[0])}`);
        await sync();
      };
      return handle;
    },
    rename: async (from: string, to: string) => {
      fsCalls.push(`rename ${from} ${to}`);
      await fs.rename(from, to);
    },
  };
});

/** A stream that takes one byte before it reports backpressure and finishes each write a turn later. */
function slowStream(): Writable & { received: Buffer[] } {
  const received: Buffer[] = [];
  const stream = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _encoding, done) {
      received.push(chunk);
      setImmediate(done);
    },
  });
  return Object.assign(stream, { received });
}

describe('export byte sink', () => {
  it('refuses an --out that is a directory before writing, naming it, and leaves no partial file', async () => {
    const dir = await tempDir();
    const out = join(dir, 'existing');
    await mkdir(out);
    await expect(openSink(out, slowStream())).rejects.toMatchObject({ code: 'AUDIT_BAD_REQUEST', message: `--out ${out}: is a directory; name a file to write the export to` });
    expect(await readdir(dir)).toEqual(['existing']);
  });

  it('removes the partial file when the name is taken by a directory during the export', async () => {
    const dir = await tempDir();
    const out = join(dir, 'late');
    const sink = await openSink(out, slowStream());
    await sink.write('some bytes\n');
    await mkdir(out);
    await expect(sink.close()).rejects.toMatchObject({ code: 'AUDIT_UNREACHABLE', message: expect.stringMatching(/^--out .*\/late: cannot rename .*\/late\.[0-9a-f]{12}\.partial to it/) as unknown });
    // The caller aborts after a failure too: harmless after close().
    await sink.abort();
    expect(await readdir(dir)).toEqual(['late']);
  });

  it('writes a file through .partial and renames it when closed', async () => {
    const dir = await tempDir();
    const out = join(dir, 'ok.ndjson');
    const sink = await openSink(out, slowStream());
    await sink.write('a\n');
    await sink.write(new TextEncoder().encode('b\n'));
    await sink.close();
    expect(await readFile(out, 'utf8')).toBe('a\nb\n');
    expect(await readdir(dir)).toEqual(['ok.ndjson']);
  });

  it('creates the file readable by its owner only, replacing an earlier export readable by others and leaving a FILE.partial it did not make alone', async () => {
    const dir = await tempDir();
    const out = join(dir, 'private.ndjson');
    await writeFile(`${out}.partial`, 'not this export');
    await chmod(`${out}.partial`, 0o644);
    await writeFile(out, 'earlier');
    await chmod(out, 0o644);
    const sink = await openSink(out, slowStream());
    const [temporary] = (await readdir(dir)).filter((name) => /^private\.ndjson\.[0-9a-f]{12}\.partial$/.test(name));
    expect((await stat(join(dir, temporary!))).mode & 0o777).toBe(0o600);
    await sink.write('secret\n');
    await sink.close();
    expect((await stat(out)).mode & 0o777).toBe(0o600);
    expect(await readFile(out, 'utf8')).toBe('secret\n');
    expect(await readFile(`${out}.partial`, 'utf8')).toBe('not this export');
    expect((await readdir(dir)).sort()).toEqual(['private.ndjson', 'private.ndjson.partial']);
  });

  it('syncs the file before the rename and the directory after it', async () => {
    const dir = await tempDir();
    const out = join(dir, 'synced.ndjson');
    const sink = await openSink(out, slowStream());
    await sink.write('a\n');
    fsCalls.length = 0;
    await sink.close();
    expect(fsCalls).toHaveLength(3);
    const temporary = /^sync (.*\.partial)$/.exec(fsCalls[0]!)?.[1];
    expect(fsCalls).toEqual([`sync ${temporary}`, `rename ${temporary} ${out}`, `sync ${dir}`]);
  });

  it('renames only its own temporary file: two exports to one FILE, or another writer of FILE.partial meanwhile, each leave a whole file', async () => {
    const dir = await tempDir();
    const out = join(dir, 'race.ndjson');
    const first = await openSink(out, slowStream());
    await first.write('first 1\n');
    // What a second export did before: remove FILE.partial and make it anew, while the first writes.
    await writeFile(`${out}.partial`, '{"second":"writer, not complete"}\n');
    const second = await openSink(out, slowStream());
    await second.write('second 1\n');
    await first.write('first 2\n');
    await second.write('second 2\n');
    await second.close();
    expect(await readFile(out, 'utf8')).toBe('second 1\nsecond 2\n');
    await first.close();
    // The last rename wins, and it is the first export, whole.
    expect(await readFile(out, 'utf8')).toBe('first 1\nfirst 2\n');
    expect(await readFile(`${out}.partial`, 'utf8')).toBe('{"second":"writer, not complete"}\n');
    expect((await readdir(dir)).sort()).toEqual(['race.ndjson', 'race.ndjson.partial']);
  });

  it('refuses an --out that is a FIFO, a symbolic link (naming its target) or a device before writing, and leaves each as it was', async () => {
    const dir = await tempDir();
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    await expect(openSink(fifo, slowStream())).rejects.toMatchObject({ code: 'AUDIT_BAD_REQUEST', message: `--out ${fifo}: is a FIFO, which the export would replace with a file; to write to it, leave out --out and redirect standard output` });
    expect((await lstat(fifo)).isFIFO()).toBe(true);

    const target = join(dir, 'target.txt');
    await writeFile(target, 'target\n');
    const link = join(dir, 'link.ndjson');
    await symlink(target, link);
    const dangling = join(dir, 'dangling.ndjson');
    await symlink(join(dir, 'nothing'), dangling);
    for (const [path, to] of [
      [link, target],
      [dangling, join(dir, 'nothing')],
    ] as const) {
      await expect(openSink(path, slowStream())).rejects.toMatchObject({ code: 'AUDIT_BAD_REQUEST', message: expect.stringContaining(`--out ${path}: is a symbolic link (to ${to})`) as unknown });
      expect((await lstat(path)).isSymbolicLink()).toBe(true);
    }
    expect(await readFile(target, 'utf8')).toBe('target\n');

    // A copy of /dev/null's node in the test's own directory (never the real one); making it needs root.
    if (process.getuid?.() === 0) {
      const device = join(dir, 'null-device');
      execFileSync('mknod', [device, 'c', '1', '3']);
      await expect(openSink(device, slowStream())).rejects.toMatchObject({ code: 'AUDIT_BAD_REQUEST', message: expect.stringContaining(`--out ${device}: is a character device`) as unknown });
      expect((await lstat(device)).isCharacterDevice()).toBe(true);
    }
    expect((await readdir(dir)).sort()).toEqual(['dangling.ndjson', 'fifo', 'link.ndjson', ...(process.getuid?.() === 0 ? ['null-device'] : []), 'target.txt']);
  });

  it('adds no error listener per write under backpressure, and takes its own off standard output when done', async () => {
    const stdout = slowStream();
    const before = stdout.listenerCount('error');
    for (let run = 0; run < 3; run++) {
      const sink = await openSink(undefined, stdout);
      for (let i = 0; i < 50; i++) {
        await sink.write(`line ${i}\n`);
        expect(stdout.listenerCount('error')).toBe(before + 1);
      }
      if (run === 2) await sink.abort();
      else await sink.close();
      expect(stdout.listenerCount('error')).toBe(before);
    }
    expect(Buffer.concat(stdout.received).toString().split('\n')).toHaveLength(151);
  });

  it('reports a stream error to the write waiting for it, and to every write after, without an uncaught event', async () => {
    const failing = new Writable({
      highWaterMark: 1,
      write(_chunk, _encoding, done) {
        setImmediate(() => done(new Error('disk full')));
      },
    });
    const sink = await openSink(undefined, failing);
    const refused = { code: 'AUDIT_UNREACHABLE', message: 'the export could not be written: disk full' };
    await expect(sink.write('x')).rejects.toMatchObject(refused);
    await expect(sink.write('y')).rejects.toMatchObject(refused);
    await sink.abort();
  });
});
