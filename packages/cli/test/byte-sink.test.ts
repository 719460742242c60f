// Goal: the export's byte sink leaves nothing behind when its path cannot become the export, keeps no listener per write or per export on a stream that outlives it, and makes its file owner-only and on disk (file, then name) before it counts as written.
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
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
    await expect(sink.close()).rejects.toMatchObject({ code: 'AUDIT_UNREACHABLE', message: expect.stringContaining(`--out ${out}: cannot rename ${out}.partial to it`) as unknown });
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

  it('creates the file readable by its owner only, replacing a stale .partial and an earlier export readable by others', async () => {
    const dir = await tempDir();
    const out = join(dir, 'private.ndjson');
    await writeFile(`${out}.partial`, 'stale');
    await chmod(`${out}.partial`, 0o644);
    await writeFile(out, 'earlier');
    await chmod(out, 0o644);
    const sink = await openSink(out, slowStream());
    expect((await stat(`${out}.partial`)).mode & 0o777).toBe(0o600);
    await sink.write('secret\n');
    await sink.close();
    expect((await stat(out)).mode & 0o777).toBe(0o600);
    expect(await readFile(out, 'utf8')).toBe('secret\n');
    expect(await readdir(dir)).toEqual(['private.ndjson']);
  });

  it('syncs the file before the rename and the directory after it', async () => {
    const dir = await tempDir();
    const out = join(dir, 'synced.ndjson');
    const sink = await openSink(out, slowStream());
    await sink.write('a\n');
    fsCalls.length = 0;
    await sink.close();
    expect(fsCalls).toEqual([`sync ${out}.partial`, `rename ${out}.partial ${out}`, `sync ${dir}`]);
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
