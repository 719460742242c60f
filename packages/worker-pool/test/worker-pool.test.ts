// Goal: a pool gives jobs to idle workers, then new ones up to threadsMax, then the least loaded (never the avoided one's while another can take it); a message settles its job as `outcome` says, or leaves it pending; a worker that throws or exits fails exactly its pending jobs and the next job starts another; idle workers exit and come back; close() fails what is pending, stops every thread and refuses later jobs unless the pool reopens; a worker holds the process only while it has a job, and only when asked to.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerPool, type JobOutcome, type WorkerJob, type WorkerPoolOptions } from '../src/index.js';

interface Answer {
  echo: unknown;
  threadId: number;
  workerData?: unknown;
}
type Response = { id: number; value: Answer } | { id: number; error: string } | { id: number; progress: number };
interface Context {
  progress: number[];
}

const WORKER = new URL('../fixtures/echo-worker.mjs', import.meta.url);
const pools: Array<WorkerPool<Response, Answer, Context>> = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

function outcome(response: Response, job: WorkerJob<Answer, Context>): JobOutcome<Answer> {
  if ('progress' in response) {
    job.context.progress.push(response.progress);
    return 'pending';
  }
  return 'error' in response ? { error: new Error(`worker said: ${response.error}`) } : { value: response.value };
}

function pool(options: Partial<WorkerPoolOptions<Response, Answer, Context>> = {}): WorkerPool<Response, Answer, Context> {
  const created = new WorkerPool<Response, Answer, Context>({
    workerUrl: WORKER,
    threadsMax: 2,
    outcome,
    errors: {
      closed: () => new Error('pool is closed'),
      closedWhilePending: () => new Error('pool closed with the job pending'),
      crashed: (err) => new Error(`worker crashed: ${err.message}`),
      exited: (code) => new Error(`worker exited (code ${code})`),
      notSent: (err) => new Error(`job not sent: ${err instanceof Error ? err.message : String(err)}`),
    },
    ...options,
  });
  pools.push(created);
  return created;
}

function ask(p: WorkerPool<Response, Answer, Context>, what: string, value?: unknown, avoid?: WorkerJob<Answer, Context>): WorkerJob<Answer, Context> {
  const job = p.begin({ progress: [] }, avoid);
  job.post({ id: job.id, ask: what, value });
  return job;
}

describe('WorkerPool', () => {
  it('answers jobs on up to threadsMax workers, idle ones first, then the least loaded', async () => {
    const p = pool({ threadsMax: 2, workerData: { niceness: 3 } });
    const first = await ask(p, 'echo', 1).answer;
    expect(first).toMatchObject({ echo: 1, workerData: { niceness: 3 } });
    expect(p.running).toBe(1);
    // The idle worker takes the next job: no second thread for jobs one after another.
    expect((await ask(p, 'echo', 2).answer).threadId).toBe(first.threadId);
    expect(p.running).toBe(1);
    // A held job keeps its worker busy: the next job starts the second worker, a third goes to the less loaded.
    const held = ask(p, 'hold');
    const second = ask(p, 'echo', 3);
    expect(p.running).toBe(2);
    const other = (await second.answer).threadId;
    expect(other).not.toBe(first.threadId);
    expect((await ask(p, 'echo', 4).answer).threadId).toBe(other);
    expect(held.pending).toBe(true);
  });

  it('gives a job another worker than the one it avoids, while another can take it', async () => {
    const p = pool({ threadsMax: 2 });
    const held = ask(p, 'hold');
    const beside = await ask(p, 'echo', 'beside', held).answer;
    const heldThread = (await ask(p, 'echo', 'beside again', held).answer).threadId;
    expect(heldThread).toBe(beside.threadId);
    // One thread only: the avoided worker is the one there is.
    const single = pool({ threadsMax: 1 });
    const holding = ask(single, 'hold');
    const job = ask(single, 'echo', 'only one', holding);
    expect(single.running).toBe(1);
    await single.crashWorkerForTest(0);
    await expect(job.answer).rejects.toThrow(/worker exited/);
    await expect(holding.answer).rejects.toThrow(/worker exited/);
  });

  it('settles a job as outcome says: a value, an error, or pending after a message before the answer', async () => {
    const p = pool();
    await expect(ask(p, 'fail', 'x').answer).rejects.toThrow('worker said: asked to fail: x');
    const job = ask(p, 'progress');
    expect(await job.answer).toMatchObject({ echo: 'after progress' });
    expect(job.context.progress).toEqual([1]);
    expect(job.pending).toBe(false);
    // A settled job sends nothing more.
    expect(job.post({ id: job.id, ask: 'echo' })).toBe(false);
  });

  it('fails the jobs of a worker that throws or exits, only those, and starts another for the next job', async () => {
    const p = pool({ threadsMax: 2 });
    const healthy = ask(p, 'hold');
    const thrower = ask(p, 'throw', undefined, healthy);
    await expect(thrower.answer).rejects.toThrow('worker crashed: thrown in the worker');
    expect(healthy.pending).toBe(true);
    await expect.poll(() => p.running).toBe(1);
    const exiting = ask(p, 'exit', undefined, healthy);
    await expect(exiting.answer).rejects.toThrow('worker exited (code 3)');
    expect(healthy.pending).toBe(true);
    expect(await ask(p, 'echo', 'after', healthy).answer).toMatchObject({ echo: 'after' });
    expect(p.running).toBe(2);
  });

  it('fails a job whose message cannot be sent, and the worker takes the next', async () => {
    const p = pool({ threadsMax: 1 });
    const job = p.begin({ progress: [] });
    expect(job.post({ id: job.id, ask: 'echo', value: () => 'a function cannot be cloned' })).toBe(false);
    await expect(job.answer).rejects.toThrow(/job not sent/);
    expect(await ask(p, 'echo', 'next').answer).toMatchObject({ echo: 'next' });
  });

  it('lets a worker idle for idleMs exit, and starts one again', async () => {
    const p = pool({ threadsMax: 1, idleMs: 20 });
    await ask(p, 'echo', 1).answer;
    expect(p.running).toBe(1);
    await expect.poll(() => p.running).toBe(0);
    expect(await ask(p, 'echo', 2).answer).toMatchObject({ echo: 2 });
    // Without idleMs a worker stays.
    const staying = pool({ threadsMax: 1 });
    await ask(staying, 'echo', 1).answer;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(staying.running).toBe(1);
  });

  it('close() fails pending jobs, stops every worker and refuses later jobs; twice is fine; a pool that reopens starts again', async () => {
    const p = pool();
    const held = [ask(p, 'hold'), ask(p, 'hold')];
    expect(p.running).toBe(2);
    await p.close();
    await p.close();
    expect(p.running).toBe(0);
    for (const job of held) await expect(job.answer).rejects.toThrow('pool closed with the job pending');
    const refused = ask(p, 'echo');
    expect(refused.pending).toBe(false);
    await expect(refused.answer).rejects.toThrow('pool is closed');
    expect(p.running).toBe(0);

    const reopening = pool({ reopens: true });
    await ask(reopening, 'echo', 1).answer;
    await reopening.close();
    expect(await ask(reopening, 'echo', 2).answer).toMatchObject({ echo: 2 });
  });

  it('holds the process open while a job is pending only when refWhilePending, and never once its jobs are done', () => {
    // The built module (the package builds before its tests), in a process of its own that does nothing else.
    const script = (refWhilePending: boolean) => `
      import { WorkerPool } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
      const fail = () => new Error('failed');
      const pool = new WorkerPool({ workerUrl: new URL(${JSON.stringify(WORKER.href)}), threadsMax: 1, refWhilePending: ${refWhilePending},
        outcome: (r) => ('error' in r ? { error: new Error(r.error) } : { value: r.value }),
        errors: { closed: fail, closedWhilePending: fail, crashed: fail, exited: fail, notSent: fail } });
      const job = pool.begin(undefined);
      job.post({ id: job.id, ask: 'echo', value: 'answered' });
      job.answer.then((a) => console.log(a.echo));`;
    // A file, not --eval: a worker inherits the process's flags, and --input-type stops it.
    const dir = mkdtempSync(join(tmpdir(), 'worker-pool-'));
    const run = (refWhilePending: boolean) => {
      const file = join(dir, `ref-${refWhilePending}.mjs`);
      writeFileSync(file, script(refWhilePending));
      return spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 20_000 });
    };
    try {
    const held = run(true);
    // Answered, then the process ends by itself: the idle worker (not closed) does not hold it.
    expect(held.stderr).toBe('');
    expect(held.status).toBe(0);
    expect(held.stdout.trim()).toBe('answered');
    const notHeld = run(false);
    expect(notHeld.status).toBe(0);
    expect(notHeld.stdout.trim()).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a threadsMax or idleMs that is not usable', () => {
    expect(() => pool({ threadsMax: 0 })).toThrow(/threadsMax must be a positive integer, got 0/);
    expect(() => pool({ threadsMax: 1.5 })).toThrow(TypeError);
    expect(() => pool({ idleMs: -1 })).toThrow(/idleMs must be a non-negative number, got -1/);
    expect(() => pool({ idleMs: Number.NaN })).toThrow(TypeError);
  });
});
