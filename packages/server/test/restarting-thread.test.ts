// Goal: a serving thread that stops without being asked to is started again on the same port —
// at once after a run that had been up a while (nothing else should get the port meanwhile),
// after a wait that doubles while runs stop soon after starting or restarts fail — and never
// again once it is closed; close() also waits for a restart already starting and closes what it
// started, and stops one that has not listened; a start that does not listen within its timeout
// is stopped and counts as failed (real worker threads that exit on command stand in for the endpoint's).
import { Worker } from 'node:worker_threads';
import { describe, expect, it, onTestFinished } from 'vitest';
import { RestartingThread, type ThreadRun } from '../src/restarting-thread.js';

/** A worker that lives until told `exit <code>`. */
const THREAD = `require('node:worker_threads').parentPort.on('message', (m) => process.exit(Number(m.split(' ')[1])));`;

interface Launched {
  port: number;
  worker: Worker;
  exited: boolean;
}

/**
 * A launch that starts real workers, fails while `failing` > 0 (counting down), takes `slowMs`
 * first (not stopped by its signal), or hangs `hanging` times: starts a worker and never
 * listens, until its signal aborts (then it terminates the worker and rejects, as a launch must).
 */
function launcher(): {
  launch: (port: number, signal: AbortSignal) => Promise<ThreadRun>;
  launched: Launched[];
  hung: Worker[];
  failNext: (n: number) => void;
  slowNext: (ms: number) => void;
  hangNext: (n: number) => void;
  /** Launches begun (a slow one is counted as it begins, before it has a thread). */
  started: () => number;
} {
  const launched: Launched[] = [];
  const hung: Worker[] = [];
  let failing = 0;
  let slowMs = 0;
  let hanging = 0;
  let started = 0;
  const launch = async (port: number, signal: AbortSignal): Promise<ThreadRun> => {
    started++;
    if (failing > 0) {
      failing--;
      throw new Error('port still taken');
    }
    if (hanging > 0) {
      hanging--;
      const worker = new Worker(THREAD, { eval: true });
      onTestFinished(() => void worker.terminate());
      hung.push(worker);
      return new Promise<ThreadRun>((_, reject) =>
        signal.addEventListener('abort', () => void worker.terminate().then(() => reject(signal.reason as Error)), { once: true }),
      );
    }
    if (slowMs > 0) {
      const wait = slowMs;
      slowMs = 0;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
    const worker = new Worker(THREAD, { eval: true });
    onTestFinished(() => void worker.terminate());
    const run: Launched = { port: port === 0 ? 4242 : port, worker, exited: false };
    const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
    void exited.then(() => (run.exited = true));
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
  return { launch, launched, hung, failNext: (n) => (failing = n), slowNext: (ms) => (slowMs = ms), hangNext: (n) => (hanging = n), started: () => started };
}

describe('a restarting thread', () => {
  it('starts a run that had been up a while again at once, on the same port, and says so', async () => {
    const { launch, launched } = launcher();
    const problems: string[] = [];
    const thread = await RestartingThread.start(0, { launch, onProblem: (err) => problems.push(err.message), stableMs: 0 });
    onTestFinished(() => thread.close());
    expect(thread.port).toBe(4242);
    launched[0]!.worker.postMessage('exit 3');
    await expect.poll(() => launched.length).toBe(2);
    expect(launched[1]!.port).toBe(4242);
    expect(problems).toEqual(['the thread stopped (exit code 3); starting it again on port 4242 now']);
    await expect.poll(() => thread.restarts).toBe(1);
    // And again: each unasked stop is one restart.
    launched[1]!.worker.postMessage('exit 1');
    await expect.poll(() => thread.restarts).toBe(2);
  });

  it('waits longer each time while runs stop soon after starting or restarts fail, and at once again after a run that stayed up', async () => {
    const { launch, launched, failNext } = launcher();
    const problems: string[] = [];
    const thread = await RestartingThread.start(7000, { launch, onProblem: (err) => problems.push(err.message), restartDelayMinMs: 10, restartDelayMaxMs: 40, stableMs: 300 });
    onTestFinished(() => thread.close());
    launched[0]!.worker.postMessage('exit 9');
    await expect.poll(() => thread.restarts).toBe(1);
    failNext(2);
    launched[1]!.worker.postMessage('exit 9');
    await expect.poll(() => thread.restarts, { timeout: 5_000 }).toBe(2);
    expect(problems).toEqual([
      'the thread stopped (exit code 9); starting it again on port 7000 in 10 ms',
      'the thread stopped (exit code 9); starting it again on port 7000 in 20 ms',
      'starting the thread again on port 7000 failed: port still taken; trying again in 40 ms',
      'starting the thread again on port 7000 failed: port still taken; trying again in 40 ms',
    ]);
    // Up longer than stableMs: at once, and the wait starts over for the next short run.
    await new Promise((resolve) => setTimeout(resolve, 350));
    launched[2]!.worker.postMessage('exit 9');
    await expect.poll(() => thread.restarts).toBe(3);
    launched[3]!.worker.postMessage('exit 9');
    await expect.poll(() => thread.restarts).toBe(4);
    expect(problems.slice(4)).toEqual(['the thread stopped (exit code 9); starting it again on port 7000 now', 'the thread stopped (exit code 9); starting it again on port 7000 in 10 ms']);
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

  it('close() waits for a restart already starting, and closes the run it started', async () => {
    const { launch, launched, slowNext, started } = launcher();
    const problems: string[] = [];
    const thread = await RestartingThread.start(7003, { launch, onProblem: (err) => problems.push(err.message), stableMs: 0 });
    slowNext(300);
    launched[0]!.worker.postMessage('exit 4');
    // The problem is told before the restart's timer fires: wait for the launch itself. (Polling
    // the problem alone let close() run first on a loaded machine, cancelling the restart.)
    await expect.poll(() => started()).toBe(2);
    expect(problems).toHaveLength(1);
    // The restart is starting (300 ms): close now.
    await thread.close();
    expect(launched).toHaveLength(2);
    expect(launched[1]!.exited).toBe(true);
    expect(thread.restarts).toBe(0);
  });

  it('stops a restart that does not listen within the start timeout, says so and tries again, so a hung start never leaves the thread down for good', async () => {
    const { launch, launched, hung, hangNext } = launcher();
    const problems: string[] = [];
    const thread = await RestartingThread.start(7005, { launch, onProblem: (err) => problems.push(err.message), stableMs: 0, restartDelayMinMs: 10, startTimeoutMs: 200 });
    onTestFinished(() => thread.close());
    hangNext(1);
    launched[0]!.worker.postMessage('exit 6');
    await expect.poll(() => thread.restarts, { timeout: 5_000 }).toBe(1);
    expect(hung).toHaveLength(1);
    expect(problems).toEqual([
      'the thread stopped (exit code 6); starting it again on port 7005 now',
      'starting the thread again on port 7005 failed: the thread did not listen within 200 ms; it was stopped; trying again in 10 ms',
    ]);
    expect(launched).toHaveLength(2);
    expect(launched[1]!.port).toBe(7005);
    // The hung start's thread was terminated, not left running beside its successor.
    expect(hung[0]!.threadId).toBe(-1);
  });

  it('close() stops a restart that has not listened yet instead of waiting for it, and starts nothing more', async () => {
    const { launch, launched, hung, hangNext } = launcher();
    const problems: string[] = [];
    // A start timeout far beyond the test: close must not wait for it.
    const thread = await RestartingThread.start(7006, { launch, onProblem: (err) => problems.push(err.message), stableMs: 0, startTimeoutMs: 600_000 });
    hangNext(1);
    launched[0]!.worker.postMessage('exit 7');
    await expect.poll(() => hung.length).toBe(1);
    const started = performance.now();
    await thread.close();
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(hung[0]!.threadId).toBe(-1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(launched).toHaveLength(1);
    expect(thread.restarts).toBe(0);
    expect(problems).toEqual(['the thread stopped (exit code 7); starting it again on port 7006 now']);
  });

  it('a first start that does not listen within the start timeout fails with that reason, its thread stopped', async () => {
    const { launch, hung, hangNext } = launcher();
    hangNext(1);
    await expect(RestartingThread.start(7007, { launch, onProblem: () => undefined, startTimeoutMs: 100 })).rejects.toThrow('the thread did not listen within 100 ms; it was stopped');
    expect(hung).toHaveLength(1);
    expect(hung[0]!.threadId).toBe(-1);
  });

  it('a launch that listens only after its start timeout (ignoring its signal) does not count as started: its run is closed', async () => {
    const { launch, launched, slowNext } = launcher();
    slowNext(300);
    await expect(RestartingThread.start(7008, { launch, onProblem: () => undefined, startTimeoutMs: 50 })).rejects.toThrow('the thread did not listen within 50 ms; it was stopped');
    expect(launched).toHaveLength(1);
    expect(launched[0]!.exited).toBe(true);
  });

  it('a report that throws is not an unhandled rejection, and restarts go on', async () => {
    const { launch, launched } = launcher();
    const thread = await RestartingThread.start(7004, {
      launch,
      onProblem: () => {
        throw new Error('the logger failed');
      },
      stableMs: 0,
    });
    onTestFinished(() => thread.close());
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    onTestFinished(() => void process.off('unhandledRejection', onUnhandled));
    launched[0]!.worker.postMessage('exit 2');
    await expect.poll(() => thread.restarts).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(unhandled).toEqual([]);
  });
});
