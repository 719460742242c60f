// Goal: once LevelDB fails a write (here its log reaches the process's file-size limit, as a full disk would stop it), the store refuses every later write until it is reopened — with the limit lifted, LevelDB would take later appends behind the partial record and drop them when the log is next read — so after kill -9 and a reopen every acknowledged event is there.
// A write already on its way into LevelDB when another fails is refused when it comes back, not acknowledged.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it, onTestFinished } from 'vitest';
import { Level } from 'level';
import { AuditStore } from '../src/index.js';
import { latchWriteFaults } from '../src/write-fault-latch.js';

/**
 * The child process: appends synced batches until one fails (its parent set a file-size limit
 * on it), prints each acknowledged batch's eventIds, then, once told on stdin, tries appends and
 * a metadata write again and prints what each answered. It runs the built store.
 */
const CHILD = `
import { createInterface } from 'node:readline';
import { AuditStore } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};

// Past the limit a write fails with EFBIG instead of the process being killed.
process.on('SIGXFSZ', () => undefined);
const store = await AuditStore.open({ location: process.argv.at(-1), onWriteFault: (fault) => console.log(\`FAULT \${fault.message}\`) });
const lines = createInterface({ input: process.stdin });
const told = () => new Promise((resolve) => lines.once('line', resolve));
let next = 0;
const batch = () =>
  Array.from({ length: 50 }, () => ({ eventId: \`e\${next++}\`, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: 'q'.repeat(1000), details: '', timestamp: Date.now() }));
const append = async () => {
  const events = batch();
  try {
    await store.append(events);
    console.log(\`ACK \${events.map((e) => e.eventId).join(' ')}\`);
    return true;
  } catch (err) {
    console.log(\`REFUSED \${err.code ?? ''} \${err.message}\`);
    return false;
  }
};
while (await append());
console.log('WAITING');
await told();
for (let i = 0; i < 10; i++) await append();
await store.putMeta({ 'write-fault-test': 1 }).then(
  () => console.log('META ACK'),
  (err) => console.log(\`META REFUSED \${err.code ?? ''}\`),
);
console.log('DONE');
await told();
`;

describe('a failed write', () => {
  it('is the last the store takes: later appends and metadata writes are refused naming the fault, and every acknowledged event survives kill -9', async () => {
    const location = await mkdtemp(join(tmpdir(), 'auditlake-write-fault-'));
    onTestFinished(() => rm(location, { recursive: true, force: true }));
    // 3 MB for any file this process writes: the log reaches it long before the 32 MiB write buffer is flushed.
    const child = spawn('prlimit', ['--fsize=3000000:unlimited', process.execPath, '--input-type=module', '-e', CHILD, location], { stdio: ['pipe', 'pipe', 'inherit'] });
    onTestFinished(() => void child.kill('SIGKILL'));
    const acknowledged = new Set<string>();
    const answers: string[] = [];
    for await (const line of createInterface({ input: child.stdout })) {
      if (line.startsWith('ACK ')) for (const id of line.slice(4).split(' ')) acknowledged.add(id);
      else answers.push(line);
      if (line === 'WAITING') {
        // The disk has room again: LevelDB could append once more.
        execFileSync('prlimit', ['--pid', String(child.pid), '--fsize=unlimited:unlimited']);
        child.stdin.write('go on\n');
      }
      if (line === 'DONE') break;
    }
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));

    expect(acknowledged.size).toBeGreaterThan(0);
    const [fault, failed, waiting, ...after] = answers;
    expect(fault).toMatch(/^FAULT IO error: .*File too large/);
    expect(failed).toMatch(/^REFUSED AUDIT_STORE_WRITE_FAILED could not write audit events/);
    expect(waiting).toBe('WAITING');
    expect(after).toHaveLength(12);
    for (const line of after.slice(0, 10)) expect(line).toMatch(/^REFUSED AUDIT_STORE_WRITE_FAILED the local store failed a write \(IO error: .*File too large\) and accepts none since: .* restart the node/);
    expect(after.slice(10)).toEqual(['META REFUSED AUDIT_STORE_WRITE_FAILED', 'DONE']);

    const reopened = await AuditStore.open({ location });
    onTestFinished(() => reopened.close());
    const stored = new Set((await reopened.readBySeq(0, acknowledged.size + 1000)).map((event) => event.eventId));
    expect([...acknowledged].filter((id) => !stored.has(id))).toEqual([]);
    // Reopened, it takes writes again.
    await reopened.putMeta({ 'after-reopen': 1 });
    expect(reopened.writeFault).toBeUndefined();
  }, 120_000);
});

describe('a write already on its way when another fails', () => {
  it('is refused when it comes back, not acknowledged: it may sit behind the partial record', async () => {
    const location = await mkdtemp(join(tmpdir(), 'auditlake-write-fault-race-'));
    onTestFinished(() => rm(location, { recursive: true, force: true }));
    const db = new Level<string, string>(location);
    await db.open();
    onTestFinished(() => db.close());
    // LevelDB's own batch, made to fail once after 20 ms (an I/O error on its log) and to take
    // 40 ms before writing otherwise: the second write starts before the first fails and ends after.
    const writes = db as unknown as { _batch: (...args: unknown[]) => Promise<unknown> };
    const real = writes._batch.bind(db);
    let calls = 0;
    writes._batch = async (...args: unknown[]) => {
      const call = ++calls;
      await new Promise((resolve) => setTimeout(resolve, call === 1 ? 20 : 40));
      if (call === 1) throw new Error('EIO: i/o error, write');
      return real(...args);
    };
    const faults: string[] = [];
    latchWriteFaults(db, (fault) => faults.push(fault.message));
    const [first, second] = await Promise.allSettled([db.batch([{ type: 'put', key: 'a', value: '1' }]), db.batch([{ type: 'put', key: 'b', value: '2' }])]);
    expect(first.status).toBe('rejected');
    expect(second.status).toBe('rejected');
    expect(String((second as PromiseRejectedResult).reason)).toMatch(/failed a write \(EIO: i\/o error, write\) and accepts none since/);
    expect(faults).toEqual(['EIO: i/o error, write']);
    // A write begun after the fault is refused before it reaches LevelDB.
    await expect(db.put('c', '3')).rejects.toThrow(/accepts none since/);
    expect(calls).toBe(2);
  });
});
