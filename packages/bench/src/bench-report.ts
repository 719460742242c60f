import { LEVELDB_TUNING } from '@auditlake/store';
import { execFileSync } from 'node:child_process';
import { cpus, release, totalmem, platform, arch } from 'node:os';
import { BENCH_PARTS, DEFAULTS, isFullSize, type BenchConfig, type BenchPart } from './bench-config.js';
import type { ClusterFigures } from './cluster-bench.js';
import { clusterMarkdown, clusterNotes, clusterSummaryRows, clusterKnobRows, type SingleNodeContext } from './cluster-report.js';
import type { IngestResult } from './ingest-bench.js';
import type { RawLevelResult } from './raw-level-bench.js';
import { cores, int, knobRow, loads, metWord, ms, pct, table } from './report-format.js';
import { Q_NEEDLE, type SearchResult } from './search-bench.js';
import type { GrowthFigures } from './growth-bench.js';
import { growthKnobRows, growthMarkdown, growthNotes, growthSummaryRows } from './growth-report.js';
import type { SoakFigures } from './soak-bench.js';
import { soakKnobRows, soakMarkdown, soakNotes, soakSummaryRows } from './soak-report.js';
import type { TieringFigures } from './tiering-bench.js';
import { postgresKnobRows, postgresMarkdown, postgresSummaryRows, type PostgresFigures } from './postgres-report.js';
import { tieringKnobRows, tieringMarkdown, tieringNotes, tieringOtherCores, tieringSummaryRows } from './tiering-report.js';
import type { IntegrityFigures } from './integrity-bench.js';
import { integrityKnobRows, integrityMarkdown, integrityNotes, integrityOtherCores, integritySummaryRows } from './integrity-report.js';

/** The issue's targets. */
export const TARGETS = {
  ingestEventsPerSecondMin: 50_000,
  ingestShareOfRawMin: 0.35,
  dayWindowP50MsMax: 50,
} as const;

export interface IngestFigures {
  /** The best round of ours, and every round. */
  ours: IngestResult;
  oursRounds: IngestResult[];
  /** The reference (chained batch, sync:true): the best round, and every round. */
  rawSync: RawLevelResult;
  rawSyncRounds: RawLevelResult[];
  /** Context: the array form our store uses, sync:true. */
  rawArraySync: RawLevelResult;
  /** Context: chained batch without sync. */
  rawNoSync: RawLevelResult;
}

/** One run of `npm run bench`: when, where, how it was started and with which sizes. */
export interface RunInfo {
  startedAt: string;
  durationMs: number;
  /** The command that reproduces the run, from the repository root. */
  command: string;
  /** os.loadavg() at the start and the end: other work on the machine skews every figure. */
  loadAverageStart: number[];
  loadAverageEnd: number[];
  config: BenchConfig;
  machine: MachineFacts;
}

/** A part's figures with the run that measured them (parts may come from different runs). */
export interface Measured<T> {
  run: RunInfo;
  figures: T;
}

export interface BenchResults {
  ingest?: Measured<IngestFigures> | undefined;
  search?: Measured<SearchResult> | undefined;
  cluster?: Measured<ClusterFigures> | undefined;
  tiering?: Measured<TieringFigures> | undefined;
  growth?: Measured<GrowthFigures> | undefined;
  soak?: Measured<SoakFigures> | undefined;
  postgres?: Measured<PostgresFigures> | undefined;
  integrity?: Measured<IntegrityFigures> | undefined;
}

export interface MachineFacts {
  node: string;
  cpuCount: number;
  cpuModel: string;
  memoryGiB: number;
  os: string;
  commit: string;
}

function gitCommit(cwd: string): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    // The report itself is output, not code: a refreshed BENCHMARKS.md does not make the code dirty.
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no', '--', '.', ':(exclude)BENCHMARKS.md'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return dirty === '' ? head : `${head} (with uncommitted changes)`;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

export function machineFacts(repoRoot: string): MachineFacts {
  const list = cpus();
  const models = [...new Set(list.map((c) => c.model.trim()))];
  return {
    node: process.version,
    cpuCount: list.length,
    cpuModel: models.join(', ') || 'unknown',
    memoryGiB: totalmem() / 1024 ** 3,
    os: `${platform()} ${release()} ${arch()}`,
    commit: gitCommit(repoRoot),
  };
}

export interface SummaryRow {
  figure: string;
  measured: string;
  reference: string;
  target: string;
  met: string;
}

function singleNodeContext(results: BenchResults): SingleNodeContext | undefined {
  if (!results.ingest) return undefined;
  const ours = results.ingest.figures.ours;
  return {
    eventsPerSecond: ours.eventsPerSecond,
    cpuMicrosPerEvent: (ours.cpu.ownCores * 1_000_000) / ours.eventsPerSecond,
    sameRun: results.ingest.run.startedAt === results.cluster?.run.startedAt,
  };
}

function summaryRows(results: BenchResults): SummaryRow[] {
  const rows: SummaryRow[] = [];
  const ingest = results.ingest?.figures;
  const search = results.search?.figures;
  if (ingest && results.ingest) {
    const config = results.ingest.run.config;
    const share = ingest.ours.eventsPerSecond / ingest.rawSync.eventsPerSecond;
    rows.push(
      {
        figure: `HTTP ingest, ${config.ingestBatchSize}-event batches, ${config.ingestConcurrency} in flight (best of ${ingest.oursRounds.length})`,
        measured: `${int(ingest.ours.eventsPerSecond)} events/s`,
        reference: `raw LevelDB, sync:true (best of ${ingest.rawSyncRounds.length}): ${int(ingest.rawSync.eventsPerSecond)} events/s`,
        target: `≥ ${int(TARGETS.ingestEventsPerSecondMin)} events/s`,
        met: metWord(ingest.ours.eventsPerSecond >= TARGETS.ingestEventsPerSecondMin),
      },
      {
        figure: 'HTTP ingest ÷ raw LevelDB (sync:true)',
        measured: pct(share),
        reference: `raw LevelDB, sync:true: ${int(ingest.rawSync.eventsPerSecond)} events/s`,
        target: `≥ ${pct(TARGETS.ingestShareOfRawMin)}`,
        met: metWord(share >= TARGETS.ingestShareOfRawMin),
      },
    );
  }
  if (search && results.search) {
    const config = results.search.run.config;
    rows.push(
      {
        figure: `search, one-day window, limit ${config.searchLimit}, over ${int(search.events)} events: p50`,
        measured: ms(search.dayWindow.p50Ms),
        reference: `p95 ${ms(search.dayWindow.p95Ms)}, p99 ${ms(search.dayWindow.p99Ms)}`,
        target: `p50 < ${TARGETS.dayWindowP50MsMax} ms`,
        met: metWord(search.dayWindow.p50Ms < TARGETS.dayWindowP50MsMax),
      },
      {
        figure: `search, \`q\` free-text scan over all ${int(search.events)} events`,
        measured: `${ms(search.qScan.p50Ms)} (median of ${search.qScan.count})`,
        reference: `${int(search.events / (search.qScan.p50Ms / 1000))} events scanned/s`,
        target: 'report only',
        met: '—',
      },
    );
  }
  if (results.cluster) rows.push(...clusterSummaryRows(results.cluster.figures, results.cluster.run.config, singleNodeContext(results)));
  if (results.tiering) rows.push(...tieringSummaryRows(results.tiering.figures, results.tiering.run.config));
  if (results.growth) rows.push(...growthSummaryRows(results.growth.figures));
  if (results.soak) rows.push(...soakSummaryRows(results.soak.figures));
  if (results.postgres) rows.push(...postgresSummaryRows(results.postgres.figures));
  if (results.integrity) rows.push(...integritySummaryRows(results.integrity.figures, results.integrity.run.config));
  return rows;
}

function notes(results: BenchResults): string[] {
  const out: string[] = [];
  const ingest = results.ingest?.figures;
  const search = results.search?.figures;
  const quick = (['ingest', 'search', 'cluster', 'tiering', 'growth', 'soak', 'postgres', 'integrity'] as const).filter((part) => {
    const section = results[part];
    return section !== undefined && !isFullSize(section.run.config, part);
  });
  if (quick.length > 0) {
    out.push(`**Quick run** (${quick.join(', ')}): sizes differ from the issue's defaults, so those figures are not comparable with the targets.`);
  }
  if (ingest) {
    const share = ingest.ours.eventsPerSecond / ingest.rawSync.eventsPerSecond;
    if (ingest.ours.eventsPerSecond < TARGETS.ingestEventsPerSecondMin) {
      out.push(
        `**Target missed:** HTTP ingest reached ${int(ingest.ours.eventsPerSecond)} events/s, ` +
          `${pct(ingest.ours.eventsPerSecond / TARGETS.ingestEventsPerSecondMin)} of the ${int(TARGETS.ingestEventsPerSecondMin)} events/s target. ` +
          `The node's event loop was busy ${pct(ingest.ours.eventLoopUtilization)} of the measured time ` +
          `(the process used ${cores(ingest.ours.cpu.ownCores)} CPU cores, client worker included)` +
          (ingest.ours.eventLoopUtilization > 0.9 ? ': the event loop is the limit, not the disk.' : '.'),
      );
    }
    if (share < TARGETS.ingestShareOfRawMin) {
      out.push(`**Target missed:** HTTP ingest is ${pct(share)} of raw LevelDB with sync:true (target ≥ ${pct(TARGETS.ingestShareOfRawMin)}).`);
    }
  }
  if (search && search.dayWindow.p50Ms >= TARGETS.dayWindowP50MsMax) {
    out.push(`**Target missed:** one-day-window search p50 is ${ms(search.dayWindow.p50Ms)} (target < ${TARGETS.dayWindowP50MsMax} ms).`);
  }
  if (results.cluster) out.push(...clusterNotes(results.cluster.figures, results.cluster.run, singleNodeContext(results)));
  if (results.tiering) out.push(...tieringNotes(results.tiering.figures, results.tiering.run.config));
  if (results.growth) out.push(...growthNotes(results.growth.figures));
  if (results.soak) out.push(...soakNotes(results.soak.figures));
  if (results.integrity) out.push(...integrityNotes(results.integrity.figures));
  const others = [
    ingest?.ours.cpu.otherCores,
    ingest?.rawSync.cpu.otherCores,
    search?.dayWindowCpu.otherCores,
    search?.qScanCpu.otherCores,
    ...(results.cluster ? results.cluster.figures.throughputRounds.map((r) => r.cpu.otherCores) : []),
    results.cluster?.figures.lag.cpu.otherCores,
    ...(results.tiering ? tieringOtherCores(results.tiering.figures) : []),
    ...(results.integrity ? integrityOtherCores(results.integrity.figures) : []),
  ].filter((n): n is number => n !== undefined);
  const busiest = Math.max(0, ...others);
  if (busiest >= 0.25) {
    out.push(
      `Other processes on this machine used up to ${cores(busiest)} CPU cores while a figure was measured ` +
        `(see the "other CPU" columns): figures measured beside them are lower than on a quiet machine.`,
    );
  }
  if (search && search.qScanMatched !== 0) {
    out.push(`The \`q\` scan needle matched ${search.qScanMatched} events; it is meant to match none so the scan reads everything.`);
  }
  return out;
}


/** Which run measured which part, for the report's "Runs" table. */
function runsTable(results: BenchResults): string {
  const runs = new Map<string, { run: RunInfo; parts: string[] }>();
  for (const part of ['ingest', 'search', 'cluster', 'tiering', 'growth', 'soak', 'postgres', 'integrity'] as const) {
    const section = results[part];
    if (!section) continue;
    const entry = runs.get(section.run.startedAt) ?? { run: section.run, parts: [] };
    entry.parts.push(part);
    runs.set(section.run.startedAt, entry);
  }
  const rows = [...runs.values()].map(({ run, parts }) => [
    parts.join(', '),
    run.startedAt,
    ms(run.durationMs),
    run.machine.commit,
    loads(run.loadAverageStart),
    loads(run.loadAverageEnd),
    `\`${run.command}\``,
  ]);
  return table(['parts', 'run started', 'whole run took', 'commit', 'load average 1/5/15 min at start', '… at end', 'reproduce (repository root)'], rows);
}

/** The generated BENCHMARKS.md, ending with the figures as JSON so a later partial run can keep them. */
export function renderMarkdown(results: BenchResults, machine: MachineFacts): string {
  const ingest = results.ingest?.figures;
  const search = results.search?.figures;
  const parts: string[] = [];
  parts.push(
    '# Benchmarks',
    '',
    '<!-- Generated by packages/bench (`npm run bench`); re-running overwrites this file. Do not edit by hand. -->',
    '',
    `Reproduce everything with \`npm run bench\` at the repository root (builds every package, then runs \`packages/bench\`); ` +
      `\`BENCH_ONLY=${BENCH_PARTS.join('|')} npm run bench\` re-measures one part and keeps the others' figures from their last run. ` +
      `The "Runs" table says which run measured each part. Each figure is measured in the same run as its reference.`,
    '',
    '## Machine',
    '',
    table(
      ['', ''],
      [
        ['node', machine.node],
        ['CPUs', `${machine.cpuCount} × ${machine.cpuModel}`],
        ['memory', `${machine.memoryGiB.toFixed(1)} GiB`],
        ['OS', machine.os],
      ],
    ),
    '',
    '### Runs',
    '',
    runsTable(results),
    '',
    '## Summary',
    '',
    table(
      ['figure', 'measured', 'reference (same run)', 'target', 'met'],
      summaryRows(results).map((r) => [r.figure, r.measured, r.reference, r.target, r.met]),
    ),
    '',
  );
  const noteLines = notes(results);
  if (noteLines.length > 0) parts.push('### Notes', '', ...noteLines.map((n) => `- ${n}`), '');

  if (ingest && results.ingest) {
    const config = results.ingest.run.config;
    const o = ingest.ours;
    const raw = (r: RawLevelResult, name: string): string[] => [name, int(r.events), ms(r.elapsedMs), int(r.eventsPerSecond), cores(r.cpu.ownCores), cores(r.cpu.otherCores)];
    parts.push(
      '## Ingest',
      '',
      `One node started in-process with \`startAuditNode\` (default configuration, logger off, temp data dir, port 0, admin token). ` +
        `A client in a worker thread (so it does not share the node's event loop) posts ${int(config.ingestBatchSize)}-event JSON batches to ` +
        `\`POST /v1/api/audit\` over keep-alive \`node:http\` connections, ${config.ingestConcurrency} requests in flight; bodies are serialised before timing. ` +
        `${int(config.ingestWarmupEvents)} warm-up events go first; the clock runs from the first measured request to the last 200. ` +
        `Events come from \`createEventGenerator\` (seed ${config.seed}) without eventIds, so the node assigns ids, ` +
        `and every request must answer \`ingested\` = its batch size. A 200 means the events are synced to disk.`,
      '',
      `The reference writes the same events straight into \`level\` in the same process: one put per event (time-ordered key, the event JSON as value), ` +
        `batches of ${int(config.ingestBatchSize)}, ${config.ingestConcurrency} batches in flight, the same warm-up, keys and values built before timing, ` +
        `and the LevelDB tuning our store opens with (${Object.entries(LEVELDB_TUNING).map(([k, v]) => `\`${k}\` ${int(v)}`).join(', ')}). ` +
        `It uses the chained form (\`db.batch()\`, \`put\` per event, \`write({ sync })\`), the fastest way to write a batch with \`level\`. ` +
        `The array form \`db.batch(ops, { sync })\`, which our store used at first, is shown for context: given an options object, abstract-level ` +
        `clones every operation with the options spread into it, which costs far more CPU per put; our store uses the chained form. ` +
        `Our store writes three keys per event (time, seq, id) with a slightly larger value (eventId, seq, ingestTs added), ` +
        `on top of HTTP, JSON parsing, validation and serialisation (in a worker thread beside the event loop: \`auditlake.ingest.parse.threads\` = 1, the default).`,
      '',
      table(
        ['run', 'events', 'time', 'events/s', 'own CPU (cores)', 'other CPU (cores)'],
        [
          ...ingest.oursRounds.map((r, i) => {
            const name = `auditlake, HTTP ingest (sync), round ${i + 1}`;
            const row = [name, int(r.events), ms(r.elapsedMs), int(r.eventsPerSecond), cores(r.cpu.ownCores), cores(r.cpu.otherCores)];
            return r === o ? row.map((c) => `**${c}**`) : row;
          }),
          ...ingest.rawSyncRounds.map((r, i) => {
            const row = raw(r, `raw LevelDB, chained batch, \`sync: true\` (reference), round ${i + 1}`);
            return r === ingest.rawSync ? row.map((c) => `**${c}**`) : row;
          }),
          raw(ingest.rawArraySync, 'raw LevelDB, array batch `db.batch(ops, { sync: true })` (context)'),
          raw(ingest.rawNoSync, 'raw LevelDB, chained batch, `sync: false` (context)'),
        ],
      ),
      '',
      `Each round runs the reference, then ours; the best round of each (bold) is the reported figure, because on this shared machine ` +
        `the fastest round is the one least disturbed by other work. Ours ÷ reference: **${pct(o.eventsPerSecond / ingest.rawSync.eventsPerSecond)}**. ` +
        `The per-request figures that follow are for ours' best round. ` +
        `Per request (${int(o.requests)} requests of ${int(config.ingestBatchSize)} events): p50 ${ms(o.requestLatency.p50Ms)}, ` +
        `p95 ${ms(o.requestLatency.p95Ms)}, p99 ${ms(o.requestLatency.p99Ms)}, max ${ms(o.requestLatency.maxMs)}. ` +
        `While measuring, the node's event loop was busy ${pct(o.eventLoopUtilization)} of the time. ` +
        `"Own CPU" is this whole process (the client worker and LevelDB's threads included); "other CPU" is the rest of the machine, from /proc/stat. ` +
        `Events stored: ${int(o.storedEvents)} (warm-up included).`,
      '',
    );
  }

  if (search && results.search) {
    const config = results.search.run.config;
    parts.push(
      '## Search',
      '',
      `${int(search.events)} generated events (seed ${config.seed}) over ${search.days} days ending at today's UTC midnight ` +
        `(about ${int(search.eventsPerDay)} a day) are loaded **directly through the store API** (\`node.store.append\`, ` +
        `batches of ${int(config.searchLoadBatchSize)}, each event validated with \`validateEvent\` as ingest does, synced) into a node started ` +
        `in-process as above; loading took ${ms(search.loadMs)} (${int(search.loadEventsPerSecond)} events/s); the store is ` +
        `${(search.storeSizeBytes / 1024 ** 2).toFixed(0)} MiB on disk. Searches then go over HTTP, one at a time, on a keep-alive connection; ` +
        `a request's time runs until its whole JSON body has arrived.`,
      '',
      table(
        ['one-day window', 'requests', 'p50', 'p95', 'p99', 'max', 'other CPU (cores)'],
        [
          [
            `\`GET /admin/audit?from=…&to=…&limit=${config.searchLimit}\`, one UTC day at random (a full page each)`,
            int(search.dayWindow.count),
            ms(search.dayWindow.p50Ms),
            ms(search.dayWindow.p95Ms),
            ms(search.dayWindow.p99Ms),
            ms(search.dayWindow.maxMs),
            cores(search.dayWindowCpu.otherCores),
          ],
        ],
      ),
      '',
      table(
        ['free-text scan', 'repetitions', 'min', 'median', 'max', 'events scanned/s (median)', 'other CPU (cores)'],
        [
          [
            `\`GET /admin/audit?q=${Q_NEEDLE}&limit=${config.searchLimit}\`, no time range (matches ${search.qScanMatched}, so it reads every event)`,
            int(search.qScan.count),
            ms(search.qScan.minMs),
            ms(search.qScan.p50Ms),
            ms(search.qScan.maxMs),
            int(search.events / (search.qScan.p50Ms / 1000)),
            cores(search.qScanCpu.otherCores),
          ],
        ],
      ),
      '',
    );
  }

  if (results.cluster) parts.push(clusterMarkdown(results.cluster.figures, results.cluster.run.config, singleNodeContext(results), results.cluster.run.machine.cpuCount), '');
  if (results.tiering) parts.push(tieringMarkdown(results.tiering.figures, results.tiering.run.config));
  if (results.growth) parts.push(growthMarkdown(results.growth.figures, results.growth.run.config));
  if (results.soak) parts.push(soakMarkdown(results.soak.figures, results.soak.run.config));
  if (results.postgres) parts.push(postgresMarkdown(results.postgres.figures, results.postgres.run.config));
  if (results.integrity) parts.push(integrityMarkdown(results.integrity.figures));

  // Each knob as the run that measured its part used it.
  const ic = results.ingest?.run.config;
  const sc = results.search?.run.config;
  parts.push(
    '## Sizes and knobs',
    '',
    'Defaults are the issue\'s sizes. Smaller values make a quick run, which writes `packages/bench/results/BENCHMARKS.md` ' +
      '(ignored by git) instead of this file unless `BENCH_OUTPUT` names a path. "Used" is the value of the run that measured that part.',
    '',
    table(
      ['variable', 'used', 'default'],
      [
        [`BENCH_ONLY (all, ${(['ingest', 'search', 'cluster', 'tiering', 'growth', 'soak', 'postgres', 'integrity'] satisfies BenchPart[]).join(', ')})`, 'see "Runs"', 'all'],
        ['BENCH_SEED', String(ic?.seed ?? sc?.seed ?? results.cluster?.run.config.seed ?? DEFAULTS.seed), String(DEFAULTS.seed)],
        knobRow('BENCH_INGEST_EVENTS', ic?.ingestEvents, DEFAULTS.ingestEvents),
        knobRow('BENCH_INGEST_WARMUP_EVENTS', ic?.ingestWarmupEvents, DEFAULTS.ingestWarmupEvents),
        knobRow('BENCH_INGEST_BATCH', ic?.ingestBatchSize, DEFAULTS.ingestBatchSize),
        knobRow('BENCH_INGEST_CONCURRENCY', ic?.ingestConcurrency, DEFAULTS.ingestConcurrency),
        knobRow('BENCH_INGEST_ROUNDS', ic?.ingestRounds, DEFAULTS.ingestRounds),
        knobRow('BENCH_SEARCH_EVENTS', sc?.searchEvents, DEFAULTS.searchEvents),
        knobRow('BENCH_SEARCH_DAYS', sc?.searchDays, DEFAULTS.searchDays),
        knobRow('BENCH_SEARCH_LOAD_BATCH', sc?.searchLoadBatchSize, DEFAULTS.searchLoadBatchSize),
        knobRow('BENCH_SEARCH_REQUESTS', sc?.searchRequests, DEFAULTS.searchRequests),
        knobRow('BENCH_SEARCH_LIMIT', sc?.searchLimit, DEFAULTS.searchLimit),
        knobRow('BENCH_QSCAN_REPS', sc?.qScanRepetitions, DEFAULTS.qScanRepetitions),
        ...clusterKnobRows(results.cluster?.run.config),
        ...tieringKnobRows(results.tiering?.run.config),
        ...growthKnobRows(results.growth?.run.config),
        ...soakKnobRows(results.soak?.run.config),
        ...postgresKnobRows(results.postgres?.run.config),
        ...integrityKnobRows(results.integrity?.run.config),
      ],
    ),
    '',
  );
  return parts.join('\n');
}

/** A compact table for the terminal. */
export function renderConsole(results: BenchResults): string {
  const rows = summaryRows(results);
  const headers = ['figure', 'measured', 'reference (same run)', 'target', 'met'];
  const cells = rows.map((r) => [r.figure, r.measured, r.reference, r.target, r.met.replaceAll('*', '')]);
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? '').length)));
  const line = (c: string[]) => c.map((v, i) => v.padEnd(widths[i] ?? 0)).join('  ');
  const out = [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)];
  for (const n of notes(results)) out.push(`note: ${n.replaceAll('*', '')}`);
  return out.join('\n');
}
