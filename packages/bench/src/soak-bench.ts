import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { S3Connections, currentManifests, loadIcebergTable, resolveIcebergTable } from '@auditlake/lake';
import { createEventGenerator, freePort, startNodeProcess, type NodeProcess } from '@auditlake/testkit';
import { absoluteNowMs, sleep } from './clock.js';
import { httpRequest, keepAliveAgent } from './http-client.js';
import { latencyStats, type LatencyStats } from './latency-stats.js';
import { trackPid, untrackPid } from './process-cleanup.js';
import { scratchDir } from './scratch-dir.js';

/** The embedded endpoint's bucket, connection and catalog (what `--embedded-s3` registers). */
const EMBEDDED_BUCKET = 'auditlake';
const EMBEDDED_CONNECTION = 'local';
export const SOAK_TABLE = 'local.soak.audit_events';
/** The maintenance cron for a run every `minutes` (0: the node's default, hourly). */
export function soakMaintenanceCron(minutes: number): string {
  return minutes === 0 ? '0 * * * *' : minutes === 1 ? '* * * * *' : `*/${minutes} * * * *`;
}
/** The node's `audit.tier.batch.size` (its default): "drained" is a backlog below one batch. */
export const SOAK_TIER_BATCH = 5000;
/** `GET /admin/audit/settings` is timed this often during the whole run. */
export const SOAK_SETTINGS_POLL_MS = 1000;
/** Ingest requests in flight at most; a paced send waits for a free slot (and slips). */
const IN_FLIGHT_MAX = 16;
const REQUEST_TIMEOUT_MS = 60_000;
const MIB = 1024 * 1024;

export interface SoakOptions {
  seed: number;
  /** Paced ingest, events/s; 0: measure it first with a closed-loop probe. */
  eventsPerSecond: number;
  probeSeconds: number;
  /**
   * With a probe, the paced rate is this share (percent) of what it reached. The probe saturates
   * the node: at 100% nothing is left for the sweep, and no backlog could ever drain.
   */
  probePercent: number;
  batchSize: number;
  seconds: number;
  sweepIntervalMs: number;
  /** Maintenance runs every this many minutes (0: the default hourly cron). */
  maintenanceMinutes: number;
  sampleMs: number;
  /** After ingest stops, the backlog must reach zero within this. */
  drainSecondsMax: number;
  /**
   * When set, heap snapshots of the node are written here (`--heapsnapshot-signal`): at the
   * middle and at the end of the paced ingest, for comparing what survives. Each stops the node
   * for seconds, so figures of such a run are not comparable.
   */
  heapSnapshotDir?: string;
  /**
   * When set, the node writes a V8 CPU profile here when it stops (`--cpu-prof`), for finding
   * what limits the sweep (open it in Chrome DevTools' Performance panel or speedscope).
   */
  cpuProfileDir?: string;
}

/** One reading of the node: its `tierStatus` and its memory. */
export interface SoakSample {
  /** Seconds since the paced ingest started (negative during the probe). */
  atS: number;
  phase: 'probe' | 'ingest' | 'drain';
  backlog: number;
  watermarkSeq: number;
  /** Seconds since the last successful sweep at the time of the reading (-1: none yet). */
  sinceSuccessS: number;
  lastFailureMs: number;
  lastError: string | null;
  rssBytes: number;
  /** The anonymous part of the RSS (heaps, the allocator's arenas, buffers): where a leak shows. Absent in runs before it was read. */
  rssAnonBytes?: number;
  /** The file-backed part: mostly LevelDB's table files, which it maps to read them — page cache the kernel takes back under pressure. */
  rssFileBytes?: number;
  heapUsedBytes: number | undefined;
  externalBytes: number | undefined;
  /** The node's longest event-loop delay since the previous reading (prom-client's monitor, reset at each scrape). */
  eventLoopDelayMaxMs: number | undefined;
  settingsMs: number;
}

/** RSS growth over a window, by least squares over its samples. */
export interface MemorySlope {
  fromS: number;
  toS: number;
  rssMiBPerHour: number;
  /** The anonymous and file-backed parts' slopes (undefined in runs before they were read). */
  anonMiBPerHour?: number | undefined;
  fileMiBPerHour?: number | undefined;
  heapMiBPerHour: number | undefined;
  /** The least JS heap used in the window: the floor garbage collection returns to (the sawtooth's slope says little). */
  heapFloorBytes: number | undefined;
}

export interface SoakFigures {
  /** The rate the paced sender aimed at, and whether it was measured by the probe. */
  offeredEventsPerSecond: number;
  probe: { eventsPerSecond: number; seconds: number; percent?: number } | undefined;
  achievedEventsPerSecond: number;
  ingestSeconds: number;
  eventsAcknowledged: number;
  batchesFailed: number;
  sendSlip: LatencyStats;
  ingestLatency: LatencyStats;
  settingsLatency: LatencyStats;
  /** The settings reads during the paced ingest only. */
  settingsLatencyUnderLoad: LatencyStats;
  /** The node's longest event-loop delay during the paced ingest (from every reading). */
  eventLoopDelayMaxMs: number | undefined;
  samples: SoakSample[];
  backlogMax: number;
  backlogAtIngestEnd: number;
  /** Ingest end → first reading with the backlog below one batch; undefined if it never was. */
  drainToBatchS: number | undefined;
  /** Ingest end → backlog zero and every acknowledged event found in the table. */
  drainToZeroS: number;
  rssStartBytes: number;
  rssEndBytes: number;
  rssMaxBytes: number;
  /** The first and last ingest readings, whole: their anonymous and file-backed parts (absent in older runs). */
  memoryStart?: SoakSample;
  memoryEnd?: SoakSample;
  /** Over the second half of the paced ingest (the first half is warm-up). */
  secondHalf: MemorySlope;
  thirdQuarter: MemorySlope;
  lastQuarter: MemorySlope;
  sweepFailures: number;
  /** The longest time the sweep went without a success while events waited (from the readings). */
  sweepGapMaxS: number;
  /** Maintenance runs on the table during the run (`GET /admin/audit/maintenance`, its last 10). */
  maintenance: { runs: number; failed: number; longestMs: number; totalMs: number; errors: string[]; compactionDeferred?: number };
  /** What the independent read of the table found. */
  verify: { files: number; rows: number; acknowledgedFound: number; duplicates: number };
  /** Where the heap snapshots went, when asked for. */
  heapSnapshotDir?: string;
  /** Where the node's CPU profile went, when asked for. */
  cpuProfileDir?: string;
  elapsedMs: number;
}

type Log = (message: string) => void;

interface SentBatch {
  k: number;
  scheduledAt: number;
  sentAt: number;
  ackedAt: number;
}

/** Node's own options for the node: heap snapshots on a signal and a CPU profile at exit, when asked for. */
function nodeArgs(options: SoakOptions): string[] {
  return [
    ...(options.heapSnapshotDir === undefined ? [] : ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${options.heapSnapshotDir}`]),
    ...(options.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`]),
  ];
}

/** A process's resident memory, bytes: all of it, and its anonymous and file-backed parts. */
interface ResidentMemory {
  rssBytes: number;
  rssAnonBytes: number;
  rssFileBytes: number;
}

/** VmRSS, RssAnon and RssFile of a process (`/proc/<pid>/status`). */
async function residentMemory(pid: number): Promise<ResidentMemory> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number => {
    const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status);
    if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
    return Number(match[1]) * 1024;
  };
  return { rssBytes: kib('VmRSS'), rssAnonBytes: kib('RssAnon'), rssFileBytes: kib('RssFile') };
}

/** A gauge from Prometheus text (first sample of that name), or undefined. */
function gauge(text: string, name: string): number | undefined {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, 'm').exec(text);
  return match ? Number(match[1]) : undefined;
}

/** Least-squares slope of (t seconds, bytes) pairs, as MiB per hour. */
function slopeMiBPerHour(points: Array<[number, number]>): number {
  if (points.length < 2) return 0;
  const n = points.length;
  const meanT = points.reduce((s, [t]) => s + t, 0) / n;
  const meanY = points.reduce((s, [, y]) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [t, y] of points) {
    num += (t - meanT) * (y - meanY);
    den += (t - meanT) ** 2;
  }
  return den === 0 ? 0 : ((num / den) * 3600) / MIB;
}

export function memorySlope(samples: readonly SoakSample[], fromS: number, toS: number): MemorySlope {
  const window = samples.filter((s) => s.phase === 'ingest' && s.atS >= fromS && s.atS <= toS);
  const heap = window.filter((s) => s.heapUsedBytes !== undefined);
  const split = window.filter((s) => s.rssAnonBytes !== undefined && s.rssFileBytes !== undefined);
  return {
    fromS,
    toS,
    rssMiBPerHour: slopeMiBPerHour(window.map((s) => [s.atS, s.rssBytes])),
    anonMiBPerHour: split.length < 2 ? undefined : slopeMiBPerHour(split.map((s) => [s.atS, s.rssAnonBytes ?? 0])),
    fileMiBPerHour: split.length < 2 ? undefined : slopeMiBPerHour(split.map((s) => [s.atS, s.rssFileBytes ?? 0])),
    heapMiBPerHour: heap.length < 2 ? undefined : slopeMiBPerHour(heap.map((s) => [s.atS, s.heapUsedBytes ?? 0])),
    heapFloorBytes: heap.length === 0 ? undefined : Math.min(...heap.map((s) => s.heapUsedBytes ?? 0)),
  };
}

/**
 * The sustained soak: one real `auditlake start --embedded-s3` process tiering to an Iceberg
 * table on its embedded endpoint with a short sweep interval and maintenance every minute,
 * paced open-loop ingest for `seconds`, `tierStatus`, memory and the settings latency read
 * throughout; then the drain, and an independent read of the table (DuckDB over the current
 * snapshot's files) that must hold every acknowledged event exactly once, else the run fails.
 */
export async function runSoakBench(options: SoakOptions, log: Log): Promise<SoakFigures> {
  await using dir = await scratchDir('soak');
  const adminToken = randomBytes(18).toString('hex');
  const ingestToken = randomBytes(18).toString('hex');
  const s3Key = { accessKeyId: `ALSOAK${randomBytes(7).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(20).toString('hex') };
  const s3Port = await freePort();
  const started = performance.now();
  const node: NodeProcess = await startNodeProcess({
    dataDir: join(dir.path, 'node'),
    args: [
      '--embedded-s3',
      '--embedded-s3-port',
      String(s3Port),
      '--log-level',
      'warn',
      '--set',
      'auditlake.audit.tier.mode=iceberg',
      '--set',
      `auditlake.audit.tier.iceberg.table=${SOAK_TABLE}`,
      '--set',
      `auditlake.audit.tier.interval.ms=${options.sweepIntervalMs}`,
      '--set',
      `auditlake.audit.tier.maintenance.cron=${soakMaintenanceCron(options.maintenanceMinutes)}`,
    ],
    nodeArgs: nodeArgs(options),
    env: {
      AUDITLAKE_ADMIN_TOKEN: adminToken,
      AUDITLAKE_INGEST_TOKEN: ingestToken,
      AUDITLAKE_EMBEDDED_S3_ACCESS_KEY: s3Key.accessKeyId,
      AUDITLAKE_EMBEDDED_S3_SECRET_KEY: s3Key.secretAccessKey,
    },
    startTimeoutMs: 60_000,
  });
  const pid = node.child.pid;
  if (pid === undefined) throw new Error('the node has no pid');
  trackPid(pid, 'auditlake soak node');
  const agent = keepAliveAgent(IN_FLIGHT_MAX + 4);
  const statusAgent = keepAliveAgent(2);
  const ingestUrl = new URL('/v1/api/audit', node.url);
  const settingsUrl = new URL('/admin/audit/settings', node.url);
  const metricsUrl = new URL('/metrics', node.url);
  const ingestHeaders = { authorization: `Token ${ingestToken}`, 'content-type': 'application/json' };
  const adminHeaders = { authorization: `Token ${adminToken}` };
  const generator = createEventGenerator({ seed: options.seed, startTs: Date.now() - 3_600_000, spanMs: 3_600_000 });
  const runTag = Date.now().toString(36);
  /** Every batch has a number k; its events are `soak-<tag>-<k>-<i>`, so the ids of acknowledged batches are known. */
  let nextBatch = 0;
  const body = (): { k: number; buffer: Buffer } => {
    const k = nextBatch++;
    const events = generator.batch(options.batchSize);
    events.forEach((event, i) => (event.eventId = `soak-${runTag}-${k}-${i}`));
    return { k, buffer: Buffer.from(JSON.stringify(events)) };
  };
  const acked = new Set<number>();
  let batchesFailed = 0;

  // Readings run through the whole run; `phase` and `origin` say where they fall.
  let phase: SoakSample['phase'] = 'probe';
  let origin = absoluteNowMs();
  const samples: SoakSample[] = [];
  const settingsReads: Array<{ phase: SoakSample['phase']; ms: number }> = [];
  let lastSampleAt = -Infinity;
  let readingsStopped = false;
  const read = async (): Promise<SoakSample> => {
    const sentAt = absoluteNowMs();
    const res = await httpRequest(statusAgent, settingsUrl, { method: 'GET', headers: adminHeaders, timeoutMs: REQUEST_TIMEOUT_MS });
    const settingsMs = absoluteNowMs() - sentAt;
    if (res.status !== 200) throw new Error(`GET /admin/audit/settings answered ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
    settingsReads.push({ phase, ms: settingsMs });
    const status = (JSON.parse(res.body.toString('utf8')) as { tierStatus: { backlog: number; watermark: { seq: number }; lastSuccessMs: number; lastFailureMs: number; lastError: string | null } }).tierStatus;
    const metrics = (await httpRequest(statusAgent, metricsUrl, { method: 'GET', headers: {}, timeoutMs: REQUEST_TIMEOUT_MS })).body.toString('utf8');
    return {
      atS: (sentAt - origin) / 1000,
      phase,
      backlog: status.backlog,
      watermarkSeq: status.watermark.seq,
      sinceSuccessS: status.lastSuccessMs > 0 ? (Date.now() - status.lastSuccessMs) / 1000 : -1,
      lastFailureMs: status.lastFailureMs,
      lastError: status.lastError,
      ...(await residentMemory(pid)),
      heapUsedBytes: gauge(metrics, 'nodejs_heap_size_used_bytes'),
      externalBytes: gauge(metrics, 'nodejs_external_memory_bytes'),
      eventLoopDelayMaxMs: ((v) => (v === undefined ? undefined : v * 1000))(gauge(metrics, 'nodejs_eventloop_lag_max_seconds')),
      settingsMs,
    };
  };
  let latest: SoakSample | undefined;
  let readingError: unknown;
  let eventLoopDelayMaxMs: number | undefined;
  const readings = (async () => {
    while (!readingsStopped) {
      const at = absoluteNowMs();
      try {
        latest = await read();
        if (latest.phase === 'ingest' && latest.eventLoopDelayMaxMs !== undefined) eventLoopDelayMaxMs = Math.max(eventLoopDelayMaxMs ?? 0, latest.eventLoopDelayMaxMs);
        if (at - lastSampleAt >= options.sampleMs - SOAK_SETTINGS_POLL_MS / 2) {
          samples.push(latest);
          lastSampleAt = at;
        }
      } catch (err) {
        readingError ??= err;
        return;
      }
      await sleep(at + SOAK_SETTINGS_POLL_MS - absoluteNowMs());
    }
  })();
  /** A failed reading fails the run. */
  const checkReadings = (): void => {
    if (readingError !== undefined) throw readingError instanceof Error ? readingError : new Error(`a reading failed: ${JSON.stringify(readingError)}`);
  };
  /** The next reading after now. */
  const fresh = async (): Promise<SoakSample> => {
    checkReadings();
    const before = latest;
    while (latest === before) {
      checkReadings();
      await sleep(100);
    }
    return latest as SoakSample;
  };

  const send = (buffer: Buffer): Promise<boolean> =>
    httpRequest(agent, ingestUrl, { method: 'POST', headers: ingestHeaders, body: buffer, timeoutMs: REQUEST_TIMEOUT_MS }).then(
      (res) => res.status === 200,
      () => false,
    );

  try {
    // The rate: a closed-loop probe with tiering on, unless given.
    let probe: SoakFigures['probe'];
    let rate = options.eventsPerSecond;
    if (rate === 0) {
      log(`soak: probing the sustained ingest rate, ${options.probeSeconds} s closed loop, ${IN_FLIGHT_MAX} in flight, tiering on…`);
      const probeStart = absoluteNowMs();
      const deadline = probeStart + options.probeSeconds * 1000;
      let events = 0;
      await Promise.all(
        Array.from({ length: IN_FLIGHT_MAX }, async () => {
          while (absoluteNowMs() < deadline) {
            const { k, buffer } = body();
            if (await send(buffer)) {
              acked.add(k);
              events += options.batchSize;
            } else batchesFailed++;
          }
        }),
      );
      const probed = Math.round(events / ((absoluteNowMs() - probeStart) / 1000));
      rate = Math.max(options.batchSize, Math.round((probed * options.probePercent) / 100));
      probe = { eventsPerSecond: probed, seconds: options.probeSeconds, percent: options.probePercent };
      log(`  ${probed} events/s; pacing at ${options.probePercent}%: ${rate} events/s`);
    }

    // Paced, open loop: a slow answer does not delay the next send, up to IN_FLIGHT_MAX in flight.
    const intervalMs = (1000 * options.batchSize) / rate;
    const count = Math.max(1, Math.round((options.seconds * 1000) / intervalMs));
    log(`soak: ${count} batches of ${options.batchSize} at ${rate} events/s for ${options.seconds} s; sweep every ${options.sweepIntervalMs} ms, maintenance ${soakMaintenanceCron(options.maintenanceMinutes)}…`);
    phase = 'ingest';
    origin = absoluteNowMs() + 20;
    const sent: SentBatch[] = [];
    const inFlight = new Set<Promise<void>>();
    let progressAt = origin;
    const snapshotAt = new Set([Math.floor(count / 2), count - 1]);
    for (let n = 0; n < count; n++) {
      if (options.heapSnapshotDir !== undefined && snapshotAt.has(n)) {
        node.child.kill('SIGUSR2');
        log(`  heap snapshot asked for at batch ${n} (into ${options.heapSnapshotDir})`);
      }
      const scheduledAt = origin + n * intervalMs;
      await sleep(scheduledAt - absoluteNowMs());
      while (inFlight.size >= IN_FLIGHT_MAX) await Promise.race(inFlight);
      checkReadings();
      const { k, buffer } = body();
      const sentAt = absoluteNowMs();
      const request: Promise<void> = send(buffer).then((ok) => {
        inFlight.delete(request);
        if (ok) {
          acked.add(k);
          sent.push({ k, scheduledAt, sentAt, ackedAt: absoluteNowMs() });
        } else batchesFailed++;
      });
      inFlight.add(request);
      if (sentAt - progressAt >= 30_000) {
        progressAt = sentAt;
        const s = latest;
        log(`  ${Math.round((sentAt - origin) / 1000)} s: backlog ${s?.backlog ?? '?'}, RSS ${s ? Math.round(s.rssBytes / MIB) : '?'} MiB, settings ${s ? s.settingsMs.toFixed(0) : '?'} ms`);
      }
    }
    await Promise.all(inFlight);
    const ingestEnd = absoluteNowMs();
    if (sent.length === 0) throw new Error('no paced batch was acknowledged');
    const first = sent.reduce((a, b) => (b.sentAt < a.sentAt ? b : a));
    const last = sent.reduce((a, b) => (b.sentAt > a.sentAt ? b : a));
    const ingestSeconds = (last.ackedAt - first.sentAt) / 1000;
    const atEnd = await fresh();

    // The drain: every acknowledged event tiered.
    phase = 'drain';
    log(`soak: ingest done (${acked.size * options.batchSize} events acknowledged); draining a backlog of ${atEnd.backlog}…`);
    const drainDeadline = ingestEnd + options.drainSecondsMax * 1000;
    let drainToBatchS: number | undefined;
    for (;;) {
      const s = await fresh();
      if (drainToBatchS === undefined && s.backlog < SOAK_TIER_BATCH) drainToBatchS = (absoluteNowMs() - ingestEnd) / 1000;
      if (s.backlog === 0) break;
      if (absoluteNowMs() > drainDeadline) throw new Error(`the backlog did not drain within ${options.drainSecondsMax} s of the end of ingest: ${s.backlog} events left (lastError ${s.lastError ?? 'none'})`);
    }
    // Verify: read the table as an outside reader would. Its own audit events may still be
    // tiering, so the read is repeated until every acknowledged event is there (or the deadline).
    let verify: SoakFigures['verify'];
    for (;;) {
      verify = await verifyTable(dir.path, s3Port, s3Key, runTag, acked);
      if (verify.duplicates > 0) throw new Error(`the table holds ${verify.duplicates} duplicate rows of acknowledged events`);
      if (verify.acknowledgedFound === acked.size * options.batchSize) break;
      if (absoluteNowMs() > drainDeadline) throw new Error(`the table holds ${verify.acknowledgedFound} of ${acked.size * options.batchSize} acknowledged events ${options.drainSecondsMax} s after ingest ended`);
      await sleep(options.sweepIntervalMs);
    }
    const drainToZeroS = (absoluteNowMs() - ingestEnd) / 1000;
    readingsStopped = true;
    await readings;
    const final = latest as SoakSample;
    if (samples.at(-1) !== final) samples.push(final);

    const metrics = (await httpRequest(statusAgent, metricsUrl, { method: 'GET', headers: {}, timeoutMs: REQUEST_TIMEOUT_MS })).body.toString('utf8');
    const ingestSamples = samples.filter((s) => s.phase === 'ingest');
    const startSample = ingestSamples[0] ?? final;
    const endSample = ingestSamples.at(-1) ?? final;
    const span = ingestSeconds;
    const figures: SoakFigures = {
      offeredEventsPerSecond: rate,
      probe,
      achievedEventsPerSecond: (sent.length * options.batchSize) / ingestSeconds,
      ingestSeconds,
      eventsAcknowledged: acked.size * options.batchSize,
      batchesFailed,
      sendSlip: latencyStats(sent.map((b) => b.sentAt - b.scheduledAt)),
      ingestLatency: latencyStats(sent.map((b) => b.ackedAt - b.sentAt)),
      settingsLatency: latencyStats(settingsReads.map((r) => r.ms)),
      settingsLatencyUnderLoad: latencyStats(settingsReads.filter((r) => r.phase === 'ingest').map((r) => r.ms)),
      eventLoopDelayMaxMs,
      samples,
      backlogMax: Math.max(...samples.map((s) => s.backlog)),
      backlogAtIngestEnd: atEnd.backlog,
      drainToBatchS,
      drainToZeroS,
      rssStartBytes: startSample.rssBytes,
      rssEndBytes: endSample.rssBytes,
      memoryStart: startSample,
      memoryEnd: endSample,
      rssMaxBytes: Math.max(...samples.map((s) => s.rssBytes)),
      secondHalf: memorySlope(samples, span / 2, span),
      thirdQuarter: memorySlope(samples, span / 2, (span * 3) / 4),
      lastQuarter: memorySlope(samples, (span * 3) / 4, span),
      sweepFailures: gauge(metrics, 'auditlake_tier_sweep_failures_total') ?? 0,
      sweepGapMaxS: Math.max(0, ...samples.filter((s) => s.phase !== 'probe' && s.backlog > 0).map((s) => s.sinceSuccessS)),
      maintenance: await maintenanceRuns(statusAgent, node.url, adminHeaders),
      verify,
      ...(options.heapSnapshotDir === undefined ? {} : { heapSnapshotDir: options.heapSnapshotDir }),
      ...(options.cpuProfileDir === undefined ? {} : { cpuProfileDir: options.cpuProfileDir }),
      elapsedMs: performance.now() - started,
    };
    return figures;
  } finally {
    readingsStopped = true;
    await readings.catch(() => undefined);
    agent.destroy();
    statusAgent.destroy();
    const code = await node.stop();
    untrackPid(pid);
    if (code !== 0 && code !== null) log(`soak: the node exited with ${code}:\n${node.output().slice(-2000)}`);
  }
}

/** The soak table's maintenance runs the node remembers (its last 10). */
async function maintenanceRuns(agent: ReturnType<typeof keepAliveAgent>, url: string, headers: Record<string, string>): Promise<SoakFigures['maintenance']> {
  const res = await httpRequest(agent, new URL('/admin/audit/maintenance', url), { method: 'GET', headers: { ...headers, accept: 'application/json' }, timeoutMs: REQUEST_TIMEOUT_MS });
  if (res.status !== 200) throw new Error(`GET /admin/audit/maintenance answered ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
  const answer = JSON.parse(res.body.toString('utf8')) as { registrations: Array<{ table: string; runs: Array<{ startedMs: number; finishedMs: number; ok: boolean; error: string | null; compactionDeferred?: string | null }> }> };
  const runs = answer.registrations.filter((r) => r.table === SOAK_TABLE).flatMap((r) => r.runs);
  const durations = runs.map((r) => r.finishedMs - r.startedMs);
  return {
    runs: runs.length,
    failed: runs.filter((r) => !r.ok).length,
    longestMs: Math.max(0, ...durations),
    totalMs: durations.reduce((a, b) => a + b, 0),
    errors: [...new Set(runs.filter((r) => !r.ok).map((r) => String(r.error)))],
    compactionDeferred: runs.filter((r) => typeof r.compactionDeferred === 'string').length,
  };
}

/**
 * The table as an outside reader sees it: the current snapshot's live data files (through the
 * node's embedded endpoint, signed with its key pair), downloaded and counted by DuckDB — rows,
 * rows of acknowledged batches, and rows whose event id appears more than once.
 */
async function verifyTable(
  scratch: string,
  s3Port: number,
  key: { accessKeyId: string; secretAccessKey: string },
  runTag: string,
  acked: ReadonlySet<number>,
): Promise<SoakFigures['verify']> {
  const connections = new S3Connections(new Map([[EMBEDDED_CONNECTION, { id: EMBEDDED_CONNECTION, endpoint: `http://127.0.0.1:${s3Port}`, region: 'us-east-1', ...key, forcePathStyle: true }]]));
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    const table = resolveIcebergTable(SOAK_TABLE, new Map([['local', { name: 'local', warehouse: `s3://${EMBEDDED_BUCKET}/warehouse`, connectionId: EMBEDDED_CONNECTION }]]));
    const objects = connections.bucket(EMBEDDED_CONNECTION, EMBEDDED_BUCKET);
    const loaded = await loadIcebergTable(objects, table);
    if (!loaded) throw new Error(`no table ${SOAK_TABLE} on the embedded endpoint`);
    const files = (await currentManifests(objects, table, loaded.metadata)).flatMap((m) => m.entries.filter((e) => e.status !== 2).map((e) => e.data_file.file_path));
    const paths: string[] = [];
    for (const [i, path] of files.entries()) {
      const local = join(scratch, `verify-${i}.parquet`);
      await writeFile(local, await objects.get(path.slice(`s3://${EMBEDDED_BUCKET}/`.length)));
      paths.push(local);
    }
    if (paths.length === 0) return { files: 0, rows: 0, acknowledgedFound: 0, duplicates: 0 };
    await connection.run(`CREATE TABLE acked AS SELECT unnest([${[...acked].join(',') || 'NULL'}]::INTEGER[]) AS k`);
    const list = paths.map((p) => `'${p}'`).join(',');
    const prefix = `soak-${runTag}-`;
    const sql = `
      WITH rows AS (SELECT event_id FROM read_parquet([${list}])),
      ours AS (SELECT event_id, CAST(split_part(substr(event_id, ${prefix.length + 1}), '-', 1) AS INTEGER) AS k FROM rows WHERE starts_with(event_id, '${prefix}'))
      SELECT
        (SELECT count(*) FROM rows)::BIGINT AS rows,
        (SELECT count(DISTINCT event_id) FROM ours WHERE k IN (SELECT k FROM acked))::BIGINT AS found,
        (SELECT count(*) - count(DISTINCT event_id) FROM rows)::BIGINT AS duplicates`;
    const result = (await connection.runAndReadAll(sql)).getRowObjectsJson()[0] ?? {};
    return { files: paths.length, rows: Number(result['rows']), acknowledgedFound: Number(result['found']), duplicates: Number(result['duplicates']) };
  } finally {
    connection.closeSync();
    instance.closeSync();
    connections.close();
  }
}
