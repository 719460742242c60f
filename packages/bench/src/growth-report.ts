import { DEFAULTS, type BenchConfig } from './bench-config.js';
import { GROWTH_COLD_READS, GROWTH_WARMUP_COMMITS, GROWTH_FIRST_CHECKPOINT, GROWTH_P50_WINDOW_COMMITS, GROWTH_SWEEP_INTERVAL_MS, type GrowthCheckpoint, type GrowthFigures, type GrowthVariant } from './growth-bench.js';
import { latencyStats } from './latency-stats.js';
import { int, knobRow, metWord, ms, table } from './report-format.js';

/** The targets for a table that lives through thousands of sweeps with maintenance. */
export const GROWTH_TARGETS = {
  metadataJsonBytesMax: 64 * 1024,
  /**
   * "metadata/ bytes linear in retained snapshots", read as: the bytes per retained snapshot at
   * the end stay within this factor of their value at the first checkpoint (history does not
   * add to them).
   */
  bytesPerSnapshotGrowthMax: 1.5,
  commitP50GrowthMax: 1.2,
  coldReadGrowthMax: 1.5,
} as const;

interface Row {
  figure: string;
  measured: string;
  reference: string;
  target: string;
  met: string;
}

const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
const size = (n: number) => (n >= 1024 ** 3 ? `${(n / 1024 ** 3).toFixed(2)} GiB` : n >= 1024 ** 2 ? `${(n / 1024 ** 2).toFixed(1)} MiB` : kib(n));
const times = (n: number) => `${n.toFixed(2)}×`;

/** The first and the last checkpoint of a variant (the first is at 100 commits unless the run is shorter). */
function ends(variant: GrowthVariant): { first: GrowthCheckpoint; last: GrowthCheckpoint } {
  const first = variant.checkpoints[0];
  const last = variant.checkpoints.at(-1);
  if (!first || !last) throw new TypeError('a growth variant without checkpoints');
  return { first, last };
}

/** metadata/ bytes per snapshot the current metadata keeps. */
export function bytesPerSnapshot(point: GrowthCheckpoint): number {
  return point.metadataBytes / Math.max(1, point.snapshots);
}

interface Verdicts {
  metadataJson: boolean;
  bytesPerSnapshot: number;
  commitP50: number;
  coldRead: number;
}

/**
 * The largest metadata.json the maintained table held between runs: every commit's when the
 * run measured it, else (an older report) the largest right before a run and at the end.
 */
export function largestMetadataJson(maintained: GrowthVariant): number {
  if (maintained.metadataJsonBytesMax !== undefined) return maintained.metadataJsonBytesMax;
  return Math.max(ends(maintained).last.metadataJsonBytes, ...maintained.maintenanceRuns.map((r) => r.metadataJsonBytesBefore));
}

function verdicts(maintained: GrowthVariant): Verdicts {
  const { first, last } = ends(maintained);
  return {
    metadataJson: largestMetadataJson(maintained) <= GROWTH_TARGETS.metadataJsonBytesMax,
    bytesPerSnapshot: bytesPerSnapshot(last) / bytesPerSnapshot(first),
    commitP50: last.commitP50Ms / first.commitP50Ms,
    coldRead: last.coldRead.ms / first.coldRead.ms,
  };
}

export function growthSummaryRows(g: GrowthFigures): Row[] {
  const [plain, maintained] = g.variants;
  const p = ends(plain);
  const m = ends(maintained);
  const v = verdicts(maintained);
  const at = `${int(m.last.commits)} commits of ${g.eventsPerCommit} events, maintenance every ${g.maintenanceEvery}`;
  return [
    {
      figure: `growth, ${at}: largest metadata.json between maintenance runs`,
      measured: kib(largestMetadataJson(maintained)),
      reference: `without maintenance: ${size(p.last.metadataJsonBytes)} at the end; maintained, at the end: ${kib(m.last.metadataJsonBytes)}`,
      target: `≤ ${kib(GROWTH_TARGETS.metadataJsonBytesMax)}`,
      met: metWord(v.metadataJson),
    },
    {
      figure: `growth, ${at}: metadata/ bytes per retained snapshot, end ÷ ${int(m.first.commits)} commits`,
      measured: `${times(v.bytesPerSnapshot)} (${kib(bytesPerSnapshot(m.last))} vs ${kib(bytesPerSnapshot(m.first))}; ${size(m.last.metadataBytes)} for ${m.last.snapshots} snapshots)`,
      reference: `without maintenance: ${size(p.last.metadataBytes)} for ${p.last.snapshots} snapshots (${kib(bytesPerSnapshot(p.last))} each, ${times(bytesPerSnapshot(p.last) / bytesPerSnapshot(p.first))})`,
      target: `within ${GROWTH_TARGETS.bytesPerSnapshotGrowthMax}× (linear in retained snapshots)`,
      met: metWord(v.bytesPerSnapshot <= GROWTH_TARGETS.bytesPerSnapshotGrowthMax),
    },
    {
      figure: `growth, ${at}: sweep commit p50 (last ${GROWTH_P50_WINDOW_COMMITS}), end ÷ ${int(m.first.commits)} commits`,
      measured: `${times(v.commitP50)} (${ms(m.last.commitP50Ms)} vs ${ms(m.first.commitP50Ms)})`,
      reference: `without maintenance: ${times(p.last.commitP50Ms / p.first.commitP50Ms)} (${ms(p.last.commitP50Ms)} vs ${ms(p.first.commitP50Ms)})`,
      target: `within ${GROWTH_TARGETS.commitP50GrowthMax}×`,
      met: metWord(v.commitP50 <= GROWTH_TARGETS.commitP50GrowthMax),
    },
    {
      figure: `growth, ${at}: cold one-day read (median of ${GROWTH_COLD_READS}), end ÷ ${int(m.first.commits)} commits`,
      measured: `${times(v.coldRead)} (${ms(m.last.coldRead.ms)}, ${m.last.coldRead.gets} GETs vs ${ms(m.first.coldRead.ms)}, ${m.first.coldRead.gets} GETs)`,
      reference: `without maintenance: ${times(p.last.coldRead.ms / p.first.coldRead.ms)} (${ms(p.last.coldRead.ms)}, ${p.last.coldRead.gets} GETs vs ${ms(p.first.coldRead.ms)}, ${p.first.coldRead.gets} GETs)`,
      target: `within ${GROWTH_TARGETS.coldReadGrowthMax}×`,
      met: metWord(v.coldRead <= GROWTH_TARGETS.coldReadGrowthMax),
    },
  ];
}

export function growthNotes(g: GrowthFigures): string[] {
  const [, maintained] = g.variants;
  const { first, last } = ends(maintained);
  const v = verdicts(maintained);
  const out: string[] = [];
  if (first.commits !== GROWTH_FIRST_CHECKPOINT) out.push(`**Growth:** the run made ${int(g.commits)} commits, so its first checkpoint is at ${int(first.commits)} commits, not ${GROWTH_FIRST_CHECKPOINT}: the growth ratios compare with that.`);
  if (!v.metadataJson) out.push(`**Target missed:** with maintenance, a metadata.json reached ${kib(largestMetadataJson(maintained))} between runs over ${int(last.commits)} commits (target ≤ ${kib(GROWTH_TARGETS.metadataJsonBytesMax)}).`);
  if (v.bytesPerSnapshot > GROWTH_TARGETS.bytesPerSnapshotGrowthMax) {
    out.push(`**Target missed:** with maintenance, metadata/ holds ${kib(bytesPerSnapshot(last))} per retained snapshot after ${int(last.commits)} commits, ${times(v.bytesPerSnapshot)} its ${kib(bytesPerSnapshot(first))} at ${int(first.commits)} (target within ${GROWTH_TARGETS.bytesPerSnapshotGrowthMax}×).`);
  }
  if (v.commitP50 > GROWTH_TARGETS.commitP50GrowthMax) {
    out.push(`**Target missed:** with maintenance, the sweep commit p50 grew ${times(v.commitP50)} from ${int(first.commits)} to ${int(last.commits)} commits (target within ${GROWTH_TARGETS.commitP50GrowthMax}×).`);
  }
  if (v.coldRead > GROWTH_TARGETS.coldReadGrowthMax) {
    out.push(`**Target missed:** with maintenance, the cold one-day read grew ${times(v.coldRead)} from ${int(first.commits)} to ${int(last.commits)} commits (target within ${GROWTH_TARGETS.coldReadGrowthMax}×).`);
  }
  return out;
}

function checkpointRow(variant: GrowthVariant, point: GrowthCheckpoint): string[] {
  const read = point.coldRead;
  return [
    int(point.commits),
    variant.maintained ? 'with' : 'without',
    kib(point.metadataJsonBytes),
    size(point.metadataBytes),
    int(point.metadataObjects),
    String(point.snapshots),
    kib(bytesPerSnapshot(point)),
    `${int(point.dataObjects)} (${size(point.dataBytes)})`,
    int(point.liveFiles),
    ms(point.commitP50Ms),
    `${ms(read.ms)} (${ms(read.minMs)}–${ms(read.maxMs)})`,
    `${read.gets} (${size(read.getBytes)})`,
    String(read.heads),
  ];
}

export function growthMarkdown(g: GrowthFigures, config: BenchConfig): string {
  const [plain, maintained] = g.variants;
  const rows: string[][] = [];
  plain.checkpoints.forEach((point, i) => {
    rows.push(checkpointRow(plain, point));
    const other = maintained.checkpoints[i];
    if (other) rows.push(checkpointRow(maintained, other));
  });
  const runs = maintained.maintenanceRuns;
  const sum = (pick: (r: (typeof runs)[number]) => number) => int(runs.reduce((total, r) => total + pick(r), 0));
  const runStats = runs.length > 0 ? latencyStats(runs.map((r) => r.ms)) : undefined;
  const last = runs.at(-1);
  const parts = [
    '## Growth',
    '',
    `After a warm-up (${GROWTH_WARMUP_COMMITS} commits, a maintenance run and a cold read on a throwaway table, so the first checkpoint does not time code still being compiled), ` +
      `two Iceberg tables on one in-process embedded S3 endpoint (127.0.0.1, SigV4-verified, as \`--embedded-s3\` starts it) receive the same ${int(g.commits)} commits of ` +
      `${g.eventsPerCommit} generated events (seed ${config.seed}) in turn: each commit is one sweep of a ${GROWTH_SWEEP_INTERVAL_MS / 60_000}-minute ` +
      `interval (its events span those minutes; ${g.days} days in all), made as the sweep makes it — \`ensureIcebergTable\` (load the current version), ` +
      `then \`commitIcebergBatch\` with the metadata-log bounded by \`metadata.previous.versions.max\` (writer id \`auditlake:<table>\`), and where maintenance is on ` +
      `\`rewriteManifestsIfMany\` and \`expireOverdueSnapshots\` (a manifest rewrite once 100 manifests, an expiry once twice \`snapshot.retain.last\` snapshots have gathered); a commit's time is all of it. ` +
      `Commits and maintenance runs are made at the time of the sweep they model — the run's start plus ${GROWTH_SWEEP_INTERVAL_MS / 60_000} minutes a commit — not the wall clock: ` +
      `a snapshot younger than 60 s is kept for readers, and on the wall clock a fast machine made a hundred commits inside that minute, so the sweep's expiry never ran between maintenance runs. ` +
      `One table is never maintained; the other gets the node's maintenance run ` +
      `(\`runIcebergMaintenance\`, as the maintenance scheduler calls it: compaction, manifest rewrite, snapshot expiry, metadata cleanup, orphan cleanup) ` +
      `after every ${g.maintenanceEvery} commits, with \`snapshot.retain.last\` ${g.policy.snapshotRetainLast}, \`orphan.min.age.ms\` ${g.policy.orphanMinAgeMs} ` +
      `(nothing else writes to the table, so orphans go at once; ` +
      `halfway between runs both tables get a stray data file, what an abandoned commit attempt leaves, ${int(g.abandonedAttempts)} in all), \`target.file.size.bytes\` ${int(g.policy.targetFileSizeBytes)} and ` +
      `\`metadata.previous.versions.max\` ${g.policy.metadataPreviousVersionsMax}. ` +
      `At ${int(GROWTH_FIRST_CHECKPOINT)} commits, every ${int(config.growthCheckpointEvery)} and at the end (after the maintenance run due then) both tables are measured: ` +
      `the current \`vN.metadata.json\`, everything under \`metadata/\` (listed), the data files, the snapshots the metadata keeps, the p50 of the last ` +
      `${GROWTH_P50_WINDOW_COMMITS} commits, and a **cold one-day read**, ${GROWTH_COLD_READS} times, each by a fresh \`IcebergTierSource\` with its own S3 client (no cached manifests or footers) ` +
      `under \`mergedSearch\` (\`@auditlake/query\`), empty local store, the run's first UTC day (${int(g.readDayEvents)} events at the end), limit ` +
      `${config.searchLimit}; the median read's time and requests (GETs, including ranged data reads, and HEADs) are reported. Every checkpoint checks that the read returned a full ` +
      `page and that the current snapshot's files hold every committed event exactly once by count. The whole run took ${ms(g.elapsedMs)}.`,
    '',
    table(
      ['commits', 'maintenance', 'metadata.json', 'metadata/ total', 'metadata/ objects', 'snapshots kept', 'metadata/ per snapshot', 'data objects', 'live data files', `commit p50 (last ${GROWTH_P50_WINDOW_COMMITS})`, `cold one-day read, median of ${GROWTH_COLD_READS} (min–max)`, 'GETs (bytes)', 'HEADs'],
      rows,
    ),
    '',
    runStats && last
      ? `Maintenance: ${runs.length} runs, ${ms(runStats.p50Ms)} p50, ${ms(runStats.maxMs)} max; in all ${sum((r) => r.filesRewritten)} files rewritten into ` +
        `${sum((r) => r.filesAdded)}, ${sum((r) => r.snapshotsExpired)} snapshots expired, ${sum((r) => r.filesDeleted)} files deleted by expiry and metadata cleanup, ` +
        `${sum((r) => r.orphansDeleted)} orphans deleted (the run fails if a stray survives a run). The last run took the table from ${size(last.bytesBefore)} to ${size(last.bytesAfter)}; ` +
        `the maintained metadata.json reached ${kib(largestMetadataJson(maintained))} at most between runs` +
        (maintained.sweepExpiries === undefined ? '.' : `, with ${int(maintained.sweepExpiries)} sweep commits expiring overdue snapshots between runs.`)
      : 'Maintenance: no run (fewer commits than the maintenance interval).',
    '',
  ];
  return parts.join('\n');
}

export function growthKnobRows(config: BenchConfig | undefined): string[][] {
  return [
    knobRow('BENCH_GROWTH_COMMITS', config?.growthCommits, DEFAULTS.growthCommits),
    knobRow('BENCH_GROWTH_EVENTS_PER_COMMIT', config?.growthEventsPerCommit, DEFAULTS.growthEventsPerCommit),
    knobRow('BENCH_GROWTH_MAINTENANCE_EVERY', config?.growthMaintenanceEvery, DEFAULTS.growthMaintenanceEvery),
    knobRow('BENCH_GROWTH_CHECKPOINT_EVERY', config?.growthCheckpointEvery, DEFAULTS.growthCheckpointEvery),
  ];
}
