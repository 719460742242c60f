import { DEFAULTS, type BenchConfig } from './bench-config.js';
import { int, knobRow, metWord, ms, table } from './report-format.js';
import { soakMaintenanceCron, SOAK_SETTINGS_POLL_MS, SOAK_TABLE, SOAK_TIER_BATCH, type MemorySlope, type SoakFigures, type SoakSample } from './soak-bench.js';

/** What the sustained soak must show. */
export const SOAK_TARGETS = {
  /** After ingest stops, the backlog is below one batch within this. */
  drainToBatchSecondsMax: 60,
  /** `GET /admin/audit/settings` stays fast under load. */
  settingsP99MsMax: 100,
} as const;

/**
 * RSS still growing in the last quarter at more than this share of the third quarter's rate is
 * not levelling off; below this many MiB/h over the second half it is flat whatever the shape.
 */
const LEVELLING_SHARE = 0.5;
const FLAT_MIB_PER_HOUR = 20;

interface Row {
  figure: string;
  measured: string;
  reference: string;
  target: string;
  met: string;
}

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MiB`;
const perHour = (n: number | undefined) => (n === undefined ? 'n/a' : `${n >= 0 ? '+' : ''}${n.toFixed(0)} MiB/h`);
const seconds = (n: number | undefined) => (n === undefined ? 'never' : `${n.toFixed(0)} s`);

/** The JS heap's floor from the third to the last quarter: what survives garbage collection. */
function heapFloorPart(f: SoakFigures): string {
  const from = f.thirdQuarter.heapFloorBytes;
  const to = f.lastQuarter.heapFloorBytes;
  if (from === undefined || to === undefined) return '';
  const grows = to > from * 1.25 && to - from > 16 * 1024 * 1024;
  return ` (JS heap floor ${mib(from)} → ${mib(to)}: ${grows ? 'what survives GC grows — compare heap snapshots (--heapsnapshot-signal)' : 'flat, so the growth is outside the JS heap — LevelDB, buffers, the allocator'})`;
}

/**
 * Warm-up (levelling off or flat) or still growing, with what grows. Judged on the anonymous
 * part of the RSS where it was read: the file-backed part is mostly LevelDB's table files,
 * which LevelDB maps to read them; it grows with the store and is page cache the kernel reclaims,
 * not memory the node holds.
 */
export function memoryVerdict(f: SoakFigures): string {
  const { secondHalf, thirdQuarter, lastQuarter } = f;
  const split = secondHalf.anonMiBPerHour !== undefined;
  const slope = (s: MemorySlope) => (split ? (s.anonMiBPerHour ?? 0) : s.rssMiBPerHour);
  const what = split ? 'anonymous memory' : 'RSS';
  const filePart = split ? `; file-backed (LevelDB's mapped table files, page cache) ${perHour(secondHalf.fileMiBPerHour)}` : '';
  const heapPart = heapFloorPart(f) + filePart;
  if (slope(secondHalf) < FLAT_MIB_PER_HOUR) return `flat: ${what} ${perHour(slope(secondHalf))} over the second half${heapPart}`;
  // Not growing in the last quarter: the half's slope came from a step between its quarters (a
  // sawtooth's phase: the JS heap swings by hundreds of MiB between collections), not a trend.
  // Compared as rates, a falling third quarter made any last quarter look like growth.
  if (slope(lastQuarter) < FLAT_MIB_PER_HOUR) {
    return `levelled: ${what} ${perHour(slope(secondHalf))} over the second half, but ${perHour(slope(thirdQuarter))} in its third quarter and ${perHour(slope(lastQuarter))} in the last${heapPart}`;
  }
  if (slope(lastQuarter) <= slope(thirdQuarter) * LEVELLING_SHARE) {
    return `warm-up: ${what} growth slows from ${perHour(slope(thirdQuarter))} (third quarter) to ${perHour(slope(lastQuarter))} (last quarter)${heapPart}`;
  }
  return `**still growing**: ${what} ${perHour(slope(thirdQuarter))} in the third quarter, ${perHour(slope(lastQuarter))} in the last — a longer run (or heap snapshots) must tell warm-up from a leak${heapPart}`;
}

/** "anonymous A → B, file-backed C → D" over the ingest, where the split was read. */
function residentSplit(f: SoakFigures): string {
  const start = f.memoryStart;
  const end = f.memoryEnd;
  if (start?.rssAnonBytes === undefined || end?.rssAnonBytes === undefined || start.rssFileBytes === undefined || end.rssFileBytes === undefined) return '';
  return `; anonymous ${mib(start.rssAnonBytes)} → ${mib(end.rssAnonBytes)}, file-backed ${mib(start.rssFileBytes)} → ${mib(end.rssFileBytes)}`;
}

function window(s: MemorySlope): string {
  return `${s.fromS.toFixed(0)}–${s.toS.toFixed(0)} s`;
}

export function soakSummaryRows(f: SoakFigures): Row[] {
  const at = `soak, ${int(f.achievedEventsPerSecond)} events/s for ${f.ingestSeconds.toFixed(0)} s, Iceberg tiering`;
  return [
    {
      figure: `${at}: backlog below one batch (${int(SOAK_TIER_BATCH)}) after ingest stops`,
      measured: seconds(f.drainToBatchS),
      reference: `backlog max ${int(f.backlogMax)}, ${int(f.backlogAtIngestEnd)} at the end of ingest; zero and verified after ${seconds(f.drainToZeroS)}`,
      target: `≤ ${SOAK_TARGETS.drainToBatchSecondsMax} s`,
      met: metWord(f.drainToBatchS !== undefined && f.drainToBatchS <= SOAK_TARGETS.drainToBatchSecondsMax),
    },
    {
      figure: `${at}: node RSS growth over the second half`,
      measured: perHour(f.secondHalf.rssMiBPerHour),
      reference: `RSS ${mib(f.rssStartBytes)} → ${mib(f.rssEndBytes)} (max ${mib(f.rssMaxBytes)})${residentSplit(f)}; ${memoryVerdict(f).replaceAll('**', '')}`,
      target: 'report only',
      met: '—',
    },
    {
      figure: `${at}: GET /admin/audit/settings under load, p50 / p99`,
      measured: `${ms(f.settingsLatencyUnderLoad.p50Ms)} / ${ms(f.settingsLatencyUnderLoad.p99Ms)}`,
      reference: `whole run (${f.settingsLatency.count} reads): max ${ms(f.settingsLatency.maxMs)}`,
      target: `p99 ≤ ${SOAK_TARGETS.settingsP99MsMax} ms`,
      met: metWord(f.settingsLatencyUnderLoad.p99Ms <= SOAK_TARGETS.settingsP99MsMax),
    },
  ];
}

export function soakNotes(f: SoakFigures): string[] {
  const out: string[] = [];
  if (f.drainToBatchS === undefined || f.drainToBatchS > SOAK_TARGETS.drainToBatchSecondsMax) {
    out.push(`**Target missed:** after the soak's ingest stopped, the backlog took ${seconds(f.drainToBatchS)} to fall below one batch (target ≤ ${SOAK_TARGETS.drainToBatchSecondsMax} s).`);
  }
  if (f.settingsLatencyUnderLoad.p99Ms > SOAK_TARGETS.settingsP99MsMax) {
    out.push(`**Target missed:** \`GET /admin/audit/settings\` p99 was ${ms(f.settingsLatencyUnderLoad.p99Ms)} during the soak (target ≤ ${SOAK_TARGETS.settingsP99MsMax} ms).`);
  }
  if (f.sweepFailures > 0 || f.maintenance.failed > 0) {
    out.push(`**Soak:** ${f.sweepFailures} sweeps and ${f.maintenance.failed} maintenance runs failed during the soak${f.maintenance.errors.length > 0 ? ` (${f.maintenance.errors.join('; ').slice(0, 200)})` : ''}.`);
  }
  if (f.achievedEventsPerSecond < f.offeredEventsPerSecond * 0.95) {
    out.push(`**Soak:** the node accepted ${int(f.achievedEventsPerSecond)} events/s of the ${int(f.offeredEventsPerSecond)} offered: ingest, not only tiering, fell behind.`);
  }
  return out;
}

/** At most this many rows of samples in the report (evenly spaced, the last always). */
const SAMPLE_ROWS_MAX = 40;

function sampleRows(samples: readonly SoakSample[]): SoakSample[] {
  if (samples.length <= SAMPLE_ROWS_MAX) return [...samples];
  const step = samples.length / (SAMPLE_ROWS_MAX - 1);
  const picked = Array.from({ length: SAMPLE_ROWS_MAX - 1 }, (_, i) => samples[Math.floor(i * step)] as SoakSample);
  picked.push(samples.at(-1) as SoakSample);
  return picked;
}

export function soakMarkdown(f: SoakFigures, config: BenchConfig): string {
  const rate = f.probe
    ? `${int(f.offeredEventsPerSecond)} events/s, ${f.probe.percent ?? 100}% of the ${int(f.probe.eventsPerSecond)} events/s a ${f.probe.seconds} s closed-loop probe (16 requests in flight, tiering on) just before reached (it saturates the node, leaving the sweep nothing)`
    : `${int(f.offeredEventsPerSecond)} events/s (\`BENCH_SOAK_RATE\`)`;
  const rows = sampleRows(f.samples).map((s) => [
    s.phase,
    `${s.atS.toFixed(0)} s`,
    int(s.backlog),
    int(s.watermarkSeq),
    s.sinceSuccessS < 0 ? '—' : `${s.sinceSuccessS.toFixed(0)} s`,
    s.lastError === null ? '' : s.lastError.slice(0, 60),
    s.rssAnonBytes === undefined || s.rssFileBytes === undefined ? mib(s.rssBytes) : `${mib(s.rssBytes)} (${mib(s.rssAnonBytes)} / ${mib(s.rssFileBytes)})`,
    s.heapUsedBytes === undefined ? 'n/a' : mib(s.heapUsedBytes),
    ms(s.settingsMs),
    s.eventLoopDelayMaxMs === undefined ? 'n/a' : ms(s.eventLoopDelayMaxMs),
  ]);
  return [
    '## Soak',
    '',
    `One real \`auditlake start --embedded-s3\` process (default configuration, logs at warn) tiers to the Iceberg table \`${SOAK_TABLE}\` on its own embedded S3 endpoint, ` +
      `with \`auditlake.audit.tier.interval.ms\` ${int(config.soakSweepIntervalMs)} and maintenance on \`${soakMaintenanceCron(config.soakMaintenanceMinutes)}\` (other maintenance settings default). ` +
      `Batches of ${int(config.soakBatchSize)} generated events (seed ${config.seed}, each with a known eventId) are sent open loop at ${rate}, ` +
      `for ${config.soakSeconds} s (at most 16 requests in flight; a send that finds none free slips). Throughout, every ${SOAK_SETTINGS_POLL_MS / 1000} s the bench times ` +
      `\`GET /admin/audit/settings\` and reads its \`tierStatus\`, the node's RSS and its anonymous and file-backed parts (\`/proc/<pid>/status\`: VmRSS, RssAnon, RssFile) and its JS heap (\`/metrics\`); a row below every ${config.soakSampleMs / 1000} s. ` +
      `When ingest stops the bench waits for the backlog to reach zero, then reads the table as an outside reader: the current snapshot's live files, downloaded through the ` +
      `endpoint and counted by DuckDB — every acknowledged event must be there exactly once (the run fails otherwise). RSS growth is the least-squares slope over the second half ` +
      `of the ingest (the first half is warm-up), and over its third and last quarters to tell levelling off from steady growth; the verdict is on the anonymous part, because the file-backed part is mostly LevelDB's table files, which LevelDB maps to read them (page cache that grows with the store and that the kernel reclaims). The whole part took ${ms(f.elapsedMs)}.` +
      (f.heapSnapshotDir === undefined ? '' : ` Heap snapshots of the node (middle and end of ingest; each stopped it for seconds, so this run's figures are distorted) are in \`${f.heapSnapshotDir}\`.`) +
      (f.cpuProfileDir === undefined ? '' : ` The node's CPU profile (\`--cpu-prof\`, which slows it somewhat) is in \`${f.cpuProfileDir}\`.`),
    '',
    table(
      ['', ''],
      [
        ['ingest offered / achieved', `${int(f.offeredEventsPerSecond)} / ${int(f.achievedEventsPerSecond)} events/s over ${f.ingestSeconds.toFixed(0)} s (${int(f.eventsAcknowledged)} events acknowledged, ${f.batchesFailed} batches failed)`],
        ['send slip p50 / p99 / max', `${ms(f.sendSlip.p50Ms)} / ${ms(f.sendSlip.p99Ms)} / ${ms(f.sendSlip.maxMs)}`],
        ['ingest latency p50 / p99 / max', `${ms(f.ingestLatency.p50Ms)} / ${ms(f.ingestLatency.p99Ms)} / ${ms(f.ingestLatency.maxMs)}`],
        ['backlog max / at the end of ingest', `${int(f.backlogMax)} / ${int(f.backlogAtIngestEnd)}`],
        [`ingest end → backlog below one batch (${int(SOAK_TIER_BATCH)})`, seconds(f.drainToBatchS)],
        ['ingest end → backlog zero and the table verified', seconds(f.drainToZeroS)],
        ['table read back', `${int(f.verify.rows)} rows in ${int(f.verify.files)} files; ${int(f.verify.acknowledgedFound)} acknowledged events found, ${f.verify.duplicates} duplicates`],
        ['sweep failures; longest wait for a sweep success while events waited', `${f.sweepFailures}; ${f.sweepGapMaxS.toFixed(0)} s`],
        [
          'maintenance runs (failed; compaction deferred while the sweep was behind); longest, total',
          `${f.maintenance.runs} (${f.maintenance.failed}; ${f.maintenance.compactionDeferred ?? '—'}); ${ms(f.maintenance.longestMs)}, ${ms(f.maintenance.totalMs)}${f.maintenance.errors.length > 0 ? ` — ${f.maintenance.errors.join('; ').slice(0, 200)}` : ''}`,
        ],
        ['RSS at the start / end of ingest (max)', `${mib(f.rssStartBytes)} / ${mib(f.rssEndBytes)} (${mib(f.rssMaxBytes)})${residentSplit(f)}`],
        [`RSS growth, second half (${window(f.secondHalf)})`, `${perHour(f.secondHalf.rssMiBPerHour)} (anonymous ${perHour(f.secondHalf.anonMiBPerHour)}, file-backed ${perHour(f.secondHalf.fileMiBPerHour)}; JS heap ${perHour(f.secondHalf.heapMiBPerHour)}, a sawtooth)`],
        [
          `… third quarter (${window(f.thirdQuarter)}) / last quarter (${window(f.lastQuarter)})`,
          `${perHour(f.thirdQuarter.rssMiBPerHour)} / ${perHour(f.lastQuarter.rssMiBPerHour)} (anonymous ${perHour(f.thirdQuarter.anonMiBPerHour)} / ${perHour(f.lastQuarter.anonMiBPerHour)})`,
        ],
        ['memory verdict', memoryVerdict(f)],
        ['node event-loop delay, longest during ingest', f.eventLoopDelayMaxMs === undefined ? 'n/a' : ms(f.eventLoopDelayMaxMs)],
        ['settings GET under load p50 / p99 / max', `${ms(f.settingsLatencyUnderLoad.p50Ms)} / ${ms(f.settingsLatencyUnderLoad.p99Ms)} / ${ms(f.settingsLatencyUnderLoad.maxMs)} (${f.settingsLatencyUnderLoad.count} reads)`],
      ],
    ),
    '',
    table(['phase', 'time', 'backlog', 'watermark seq', 'since last sweep success', 'lastError', 'RSS (anonymous / file-backed)', 'JS heap used', 'settings GET', 'event-loop delay max since the last reading'], rows),
    '',
  ].join('\n');
}

export function soakKnobRows(config: BenchConfig | undefined): string[][] {
  return [
    knobRow('BENCH_SOAK_SECONDS', config?.soakSeconds, DEFAULTS.soakSeconds),
    knobRow('BENCH_SOAK_RATE (0: probe)', config?.soakEventsPerSecond, DEFAULTS.soakEventsPerSecond),
    knobRow('BENCH_SOAK_PROBE_SECONDS', config?.soakProbeSeconds, DEFAULTS.soakProbeSeconds),
    knobRow('BENCH_SOAK_PROBE_PERCENT (paced share of the probe rate)', config?.soakProbePercent, DEFAULTS.soakProbePercent),
    knobRow('BENCH_SOAK_BATCH', config?.soakBatchSize, DEFAULTS.soakBatchSize),
    knobRow('BENCH_SOAK_SWEEP_INTERVAL_MS', config?.soakSweepIntervalMs, DEFAULTS.soakSweepIntervalMs),
    knobRow('BENCH_SOAK_MAINTENANCE_MINUTES (0: hourly)', config?.soakMaintenanceMinutes, DEFAULTS.soakMaintenanceMinutes),
    knobRow('BENCH_SOAK_SAMPLE_MS', config?.soakSampleMs, DEFAULTS.soakSampleMs),
    knobRow('BENCH_SOAK_DRAIN_SECONDS', config?.soakDrainSeconds, DEFAULTS.soakDrainSeconds),
    knobRow('BENCH_SOAK_HEAP_SNAPSHOTS (1: two snapshots into packages/bench/results/)', config?.soakHeapSnapshots, DEFAULTS.soakHeapSnapshots),
    knobRow('BENCH_SOAK_CPU_PROFILE (1: the node\'s CPU profile into packages/bench/results/)', config?.soakCpuProfile, DEFAULTS.soakCpuProfile),
  ];
}
