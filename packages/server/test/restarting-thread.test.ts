// Goal: a serving thread that stops without being asked to is started again on the same port,
// with a growing delay while restarts fail, and never again once it is closed (real worker
// threads that exit on command stand in for the endpoint's).
import { Worker } from 'node:worker_threads';
import { describe, expect, it, onTestFinished } from 'vitest';
import { RestartingThread, type ThreadRun } from '../src/restarting-thread.js';

/** A worker that lives until told `exit <code>`. */
const THREAD = `require('node:worker_threads').parentPort.on('message', (m) => process.exit(Number(m.split(' ')[1])));`;

interface Launched {
  port: number;
  worker: Worker;
}

/** A launch that starts real workers, or fails while `failing` > 0 (counting down). */
function launcher(): { launch: (port: number) => Promise<ThreadRun>; launched: Launched[]; failNext: (n: number) => void } {
  const launched: Launched[] = [];
  let failing = 0;
  const launch = async (port: number): Promise<ThreadRun> => {
    if (failing > 0) {
      failing--;
      throw new Error('port still taken');
    }
    const worker = new Worker(THREAD, { eval: true });
    onTestFinished(() => void worker.terminate());
    const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
    const run = { port: port === 0 ? 4242 : port, worker };
    launched.push(run);
    return {
      port: run.port,
      exited,
      close: async () => {
        worker.postMessage('exit 0');
        await exited;
      },
      terminate: async () => void (await worker.terminate()),
    };
  };
  return { launch, launched, failNext: (n) => (failing = n) };
}

describe('a restarting thread', () => {
  it('starts a run that stopped on its own again, on the same port, and says so', async () => {
    const { launch, launched } = launcher();
    const problems: string[] = [];
    const thread = await RestartingThread.start(0, { launch, onProblem: (err) => problems.push(err.message), restartDelayMinMs: 10 });
    onTestFinished(() => thread.close());
    expect(thread.port).toBe(4242);
    launched[0]!.worker.postMessage('exit 3');
    await expect.poll(() => launched.length).toBe(2);
    expect(launched[1]!.port).toBe(4242);
    expect(problems).toEqual(['the thread stopped (exit code 3); starting it again on port 4242 in 10 ms']);
    await expect.poll(() => thread.restarts).toBe(1);
    // And again: each unasked stop is one restart.
    launched[1]!.worker.postMessage('exit 1');
    await expect.poll(() => thread.restarts).toBe(2);
  });

  it('retries a failed restart with a doubled delay, up to the max, and starts from the least again once one succeeds', async () => {
    const { launch, launched, failNext } = launcher();
    const problems: string[] = [];
    const thread = await RestartingThread.start(7000, { launch, onProblem: (err) => problems.push(err.message), restartDelayMinMs: 10, restartDelayMaxMs: 30 });
    onTestFinished(() => thread.close());
    failNext(3);
    launched[0]!.worker.postMessage('exit 9');
    await expect.poll(() => thread.restarts, { timeout: 5_000 }).toBe(1);
    expect(problems).toEqual([
      'the thread stopped (exit code 9); starting it again on port 7000 in 10 ms',
      'starting the thread again on port 7000 failed: port still taken; trying again in 20 ms',
      'starting the thread again on port 7000 failed: port still taken; trying again in 30 ms',
      'starting the thread again on port 7000 failed: port still taken; trying again in 30 ms',
    ]);
    launched[1]!.worker.postMessage('exit 9');
    await expect.poll(() => problems.length).toBe(5);
    expect(problems[4]).toBe('the thread stopped (exit code 9); starting it again on port 7000 in 10 ms');
  });

  it('once closed, closes its run and starts none again, also when a restart was on its way', async () => {
    const { launch, launched } = launcher();
    const problems: string[] = [];
    const thread = await RestartingThread.start(7001, { launch, onProblem: (err) => problems.push(err.message), restartDelayMinMs: 10 });
    await thread.close();
    await thread.close();
    expect(launched).toHaveLength(1);
    expect(problems).toEqual([]);

    // A stop, then close while the restart waits: nothing is started.
    const waiting = await RestartingThread.start(7002, { launch, onProblem: (err) => problems.push(err.message), restartDelayMinMs: 200 });
    launched[1]!.worker.postMessage('exit 5');
    await expect.poll(() => problems.length).toBe(1);
    await waiting.close();
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(launched).toHaveLength(2);
    expect(waiting.restarts).toBe(0);
  });
});
