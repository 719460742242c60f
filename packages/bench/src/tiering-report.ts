import { DEFAULTS, type BenchConfig } from './bench-config.js';
import { cores, int, knobRow, metWord, ms, table } from './report-format.js';
import { Q_NEEDLE } from './search-bench.js';
import type { TieringFigures } from './tiering-bench.js';

/** The issues' targets for the viewer over a large Iceberg table. */
export const TIERING_TARGETS = {
  dayWindowP50MsMax: 100,
  qScanVsDuckDbMax: 3,
  /** `q` matching nothing over the 10M-event table, p50. */
  qScanP50MsMax: 500,
  fileBytesVsDuckDbMax: 1.1,
  fileWriteVsDuckDbMax: 2,
} as const;

interface Row {
  figure: string;
  measured: string;
  reference: string;
  target: string;
  met: string;
}

const mib = (n: number) => `${(n / 1024 ** 2).toFixed(1)} MiB`;
const kib = (n: number) => `${(n / 1024).toFixed(0)} KiB`;

export function tieringSummaryRows(t: TieringFigures, config: BenchConfig): Row[] {
  const rows: Row[] = t.sweeps.map((s) => ({
    figure: `tiering sweep, ${s.mode}, ${int(s.events)} events, batches of ${int(config.tierSweepBatch)}, embedded S3 endpoint`,
    measured: `${int(s.eventsPerSecond)} events/s, ${s.commitsPerSecond.toFixed(1)} commits/s`,
    reference: `${ms(s.perCommit.p50Ms)} per commit p50, ${ms(s.perCommit.p99Ms)} p99; ${mib(s.dataBytes)} of Parquet`,
    target: 'report only',
    met: '—',
  }));
  const v = t.viewer;
  const ratio = v.qScan.p50Ms / v.duck.p50Ms;
  rows.push(
    {
      figure: `viewer, Iceberg table of ${int(v.events)} events, one-day window, limit ${config.searchLimit}: p50`,
      measured: ms(v.dayWindow.p50Ms),
      reference: `p95 ${ms(v.dayWindow.p95Ms)}; ${kib(v.dayWindowBytes.dataBytes)} of ${mib(v.tableDataBytes)} data fetched per request`,
      target: `p50 < ${TIERING_TARGETS.dayWindowP50MsMax} ms`,
      met: metWord(v.dayWindow.p50Ms < TIERING_TARGETS.dayWindowP50MsMax),
    },
    {
      figure: `viewer, \`q\` scan over the whole table (${int(v.events)} events) ÷ DuckDB on the same files`,
      measured: `${ratio.toFixed(2)}× (${ms(v.qScan.p50Ms)} vs ${ms(v.duck.p50Ms)})`,
      reference: `DuckDB ${v.duckThreads} threads: ${ms(v.duck.p50Ms)}; 1 thread: ${ms(v.duckSingle.p50Ms)}`,
      target: `within ${TIERING_TARGETS.qScanVsDuckDbMax}×`,
      met: metWord(ratio <= TIERING_TARGETS.qScanVsDuckDbMax),
    },
    {
      figure: `viewer, \`q\` matching nothing over the whole table (${int(v.events)} events): p50`,
      measured: ms(v.qScan.p50Ms),
      reference: `${mib(v.qScanBytes.dataBytes)} of data fetched${v.qScanGroupsPruned === undefined ? '' : `, ${int(v.qScanGroupsPruned)} row groups ruled out by their footer sketch`}`,
      target: `p50 ≤ ${TIERING_TARGETS.qScanP50MsMax} ms`,
      met: metWord(v.qScan.p50Ms <= TIERING_TARGETS.qScanP50MsMax),
    },
  );
  for (const [name, scan] of [['user=X', v.userScan], ['table=X', v.tableScan]] as const) {
    if (scan === undefined) continue;
    rows.push({
      figure: `viewer, \`${name}\` (a generated ${name === 'user=X' ? 'user' : 'table name'} at random) over the whole table, limit ${config.searchLimit}: p50`,
      measured: ms(scan.latency.p50Ms),
      reference: `p95 ${ms(scan.latency.p95Ms)}; ${kib(scan.bytes.dataBytes)} of data fetched and ${scan.groupsPrunedMean.toFixed(0)} row groups ruled out per request; ${scan.matchedMean.toFixed(0)} events returned on average`,
      target: 'report only',
      met: '—',
    });
  }
  const f = t.file;
  if (f !== undefined) {
    const bytesRatio = f.bytes / f.duckBytes;
    const writeRatio = f.write.p50Ms / f.duckWrite.p50Ms;
    rows.push(
      {
        figure: `tier data file of ${int(f.events)} events (${f.codec}): bytes ÷ DuckDB's (zstd, same rows)`,
        measured: `${bytesRatio.toFixed(2)}× (${(f.bytes / f.events).toFixed(1)} vs ${(f.duckBytes / f.events).toFixed(1)} B/event)`,
        reference: `DuckDB ${kib(f.duckBytes)}, ours ${kib(f.bytes)}${f.bytesWithoutSketches === undefined ? '' : ` (row-group sketches: ${int(f.bytes - f.bytesWithoutSketches)} bytes)`}`,
        target: `≤ ${TIERING_TARGETS.fileBytesVsDuckDbMax}×`,
        met: metWord(bytesRatio <= TIERING_TARGETS.fileBytesVsDuckDbMax),
      },
      {
        figure: `tier data file of ${int(f.events)} events: write time ÷ DuckDB's (p50 of ${f.write.count} rounds)`,
        measured: `${writeRatio.toFixed(2)}× (${ms(f.write.p50Ms)} vs ${ms(f.duckWrite.p50Ms)})`,
        reference:
          f.poolThreads === undefined
            ? `DuckDB ${f.duckThreads} threads; ours one thread`
            : `DuckDB ${f.duckThreads} threads; ours the encoder pool, ${f.poolThreads} threads${f.writeOneThread === undefined ? '' : ` (one thread: ${ms(f.writeOneThread.p50Ms)})`}`,
        target: `≤ ${TIERING_TARGETS.fileWriteVsDuckDbMax}×`,
        met: metWord(writeRatio <= TIERING_TARGETS.fileWriteVsDuckDbMax),
      },
    );
  }
  return rows;
}

export function tieringNotes(t: TieringFigures, config: BenchConfig): string[] {
  const out: string[] = [];
  const v = t.viewer;
  if (v.events < DEFAULTS.tierTableEvents) {
    out.push(
      `**Reduced size:** the viewer's Iceberg table holds ${int(v.events)} events, not the issue's ${int(DEFAULTS.tierTableEvents)} ` +
        `(BENCH_TIER_TABLE_EVENTS=${config.tierTableEvents}), to fit the run's time budget on this 2-core machine; the one-day-window ` +
        `figure depends on a day's size, the scan figures grow with the table.`,
    );
  }
  if (v.dayWindow.p50Ms >= TIERING_TARGETS.dayWindowP50MsMax) {
    out.push(
      `**Target missed:** viewer one-day-window p50 over the Iceberg table is ${ms(v.dayWindow.p50Ms)} (target < ${TIERING_TARGETS.dayWindowP50MsMax} ms). ` +
        `Pruning works at the file level (${v.dayWindowFilesRead.toFixed(1)} files opened per request) and at the row-group level (the reader visits a ` +
        `file's row groups newest first and stops once the page is full: ${kib(v.dayWindowBytes.dataBytes)} of ${mib(v.tableDataBytes)} fetched per request); ` +
        `what remains is per-request work on a loaded machine — checking the table version (the hint and two HEADs, in parallel), reading the \`ts\` column ` +
        `of the newest row group of the day and then the pages holding its ${config.searchLimit} newest rows.`,
    );
  }
  const ratio = v.qScan.p50Ms / v.duck.p50Ms;
  if (ratio > TIERING_TARGETS.qScanVsDuckDbMax) {
    out.push(
      `**Target missed:** the viewer's \`q\` scan takes ${ratio.toFixed(1)}× DuckDB's time on the same files (target within ${TIERING_TARGETS.qScanVsDuckDbMax}×). ` +
        `Ours fetches each row group's six text columns over S3 HTTP from the in-process embedded S3 endpoint (its request handling and the AWS SDK's run on the ` +
        `reader's own thread) and searches them in worker threads (Snappy decompression in JavaScript, folded to lower case, then a byte search); DuckDB reads ` +
        `local copies in vectorised C++ with ${v.duckThreads} threads (on 1 thread it takes ${ms(v.duckSingle.p50Ms)}; ours takes ` +
        `${(v.qScan.p50Ms / v.duckSingle.p50Ms).toFixed(1)}× as long).`,
    );
  }
  if (v.qScanMatched !== v.duckMatched) out.push(`The \`q\` scan matched ${v.qScanMatched} events in ours and ${v.duckMatched} in DuckDB: the predicates differ.`);
  return out;
}

export function tieringOtherCores(t: TieringFigures): number[] {
  return [...t.sweeps.map((s) => s.cpu.otherCores), t.viewer.dayWindowCpu.otherCores, t.viewer.qScanCpu.otherCores, t.viewer.duckCpu.otherCores].filter(
    (n): n is number => n !== undefined,
  );
}

export function tieringMarkdown(t: TieringFigures, config: BenchConfig): string {
  const v = t.viewer;
  const parts: string[] = [
    '## Tiering',
    '',
    `Everything goes to a real S3 endpoint over HTTP: the embedded S3 endpoint (SigV4-verified, s3rver serving reads) started in-process on 127.0.0.1 (as \`--embedded-s3\` does), ` +
      `backed by a temp dir, with path-style requests through the same \`S3Connections\`/\`ObjectStore\` (AWS SDK v3) the node uses. ` +
      `The object stores are wrapped to count the bytes put and fetched.`,
    '',
    '### Sweep throughput',
    '',
    `${int(config.tierSweepEvents)} generated events (seed ${config.seed}) over the last ${config.tierSweepDays} days are appended to a real ` +
      `LevelDB \`AuditStore\` (\`AuditStore.open\`, validated) before timing, in appends of ${int(config.ingestBatchSize)} (one ingest request's batch; each append shares one ingest millisecond, which a sweep never splits, so a commit holds at most the batch size). A \`TierSweeper\` ` +
      `(batchSizeMax ${int(config.tierSweepBatch)}, settle 0, always leader) then calls \`sweep()\` in a loop until it answers \`nothing-to-tier\`: ` +
      `first in parquet mode (\`${'s3://bench/parquet/audit'}\`: day files plus a commit marker per batch), then — the watermark reset — ` +
      `in iceberg mode (catalog warehouse \`s3://bench/warehouse\`, one Iceberg commit per batch: data files per day, manifest, manifest list, ` +
      `\`vN.metadata.json\` with If-None-Match, hint). A commit's time is one \`sweep()\` call: reading the batch from LevelDB, encoding, the puts, the commit.`,
    '',
    table(
      ['mode', 'events', 'commits', 'time', 'events/s', 'commits/s', 'Parquet data', 'all bytes put', 'ms/commit p50', 'p99', 'max', 'own CPU (cores)', 'other CPU (cores)'],
      t.sweeps.map((s) => [
        s.mode,
        int(s.events),
        int(s.commits),
        ms(s.elapsedMs),
        int(s.eventsPerSecond),
        s.commitsPerSecond.toFixed(2),
        mib(s.dataBytes),
        mib(s.bytesPut),
        ms(s.perCommit.p50Ms),
        ms(s.perCommit.p99Ms),
        ms(s.perCommit.maxMs),
        cores(s.cpu.ownCores),
        cores(s.cpu.otherCores),
      ]),
    ),
    '',
    '### Viewer over a large Iceberg table',
    '',
    `A table of ${int(v.events)} generated events (seed ${config.seed + 1}) over ${v.days} UTC days is built with \`commitIcebergBatch\` directly — ` +
      `the sweep's commit code and writer, with commits of 100,000 events in event-time order instead of 5,000 (each commit writes a file per day it covers); a worker ` +
      `thread generates and validates the next batch while the main thread encodes and commits: ${int(v.commits)} commits, ${int(v.dataFiles)} data files, ` +
      `${mib(v.tableDataBytes)} of Parquet, built in ${ms(v.buildMs)}. Each request is \`mergedSearch\` (\`@auditlake/query\`) with an empty local ` +
      `iterator and one long-lived \`IcebergTierSource\` over the S3 endpoint, as the node keeps it: it keeps the table's file list while the version ` +
      `holds (each request GETs the version hint and HEADs \`v(N+1)\` and \`vN.metadata.json\`, in parallel) and caches manifests and data file footers. ` +
      `A time-only request reads, per row group, the \`ts\` column and then only the pages holding the rows that can rank. The first request of the fresh source fetched ` +
      `${kib(v.coldBytes.metadataBytes)} of metadata in ${int(v.coldBytes.metadataRequests)} GETs and ${kib(v.coldBytes.dataBytes)} of data; it and 5 more are warm-up.`,
    '',
    table(
      ['one-day window', 'requests', 'p50', 'p95', 'p99', 'max', 'data fetched / request', 'of the table', 'data GETs / request', 'metadata fetched / request', 'files read / request', 'other CPU (cores)'],
      [
        [
          `\`from\`/\`to\` one UTC day at random, limit ${config.searchLimit}`,
          int(v.dayWindow.count),
          ms(v.dayWindow.p50Ms),
          ms(v.dayWindow.p95Ms),
          ms(v.dayWindow.p99Ms),
          ms(v.dayWindow.maxMs),
          kib(v.dayWindowBytes.dataBytes),
          `${((v.dayWindowBytes.dataBytes / v.tableDataBytes) * 100).toFixed(2)}% of ${mib(v.tableDataBytes)}`,
          v.dayWindowBytes.dataRequests.toFixed(1),
          `${kib(v.dayWindowBytes.metadataBytes)} in ${v.dayWindowBytes.metadataRequests.toFixed(1)} GETs`,
          v.dayWindowFilesRead.toFixed(1),
          cores(v.dayWindowCpu.otherCores),
        ],
      ],
    ),
    '',
    `Free-text scan: \`q=${Q_NEEDLE}\` with no time range (it matches ${v.qScanMatched} events). A row group whose footer sketch lacks one of the needle's ` +
      `trigrams is skipped without a fetch${v.qScanGroupsPruned === undefined ? '' : ` (${int(v.qScanGroupsPruned)} per scan)`}; the six text columns of any other are fetched and searched ` +
      `(dictionary-encoded columns by their dictionary page, the others by their decompressed page bytes, in worker threads), and a group whose bytes could hold ` +
      `the needle is then decoded and tested row by row. ` +
      `The reference is DuckDB (\`@duckdb/node-api\`, in this process) over the **same data files, downloaded from the S3 endpoint to a temp dir** ` +
      `first (${ms(v.downloadMs)}, not timed), with the same predicate — \`contains(lower(col), needle)\` over query, details, resource, user_id, action, tables — ` +
      `and the same page: \`SELECT * … ORDER BY ts DESC, ingest_ts DESC, event_id DESC LIMIT ${config.searchLimit}\`, all rows read back (matched ${v.duckMatched}). ` +
      `Ours fetches its bytes over S3 HTTP from the embedded endpoint; DuckDB reads local files.`,
    '',
    table(
      ['free-text scan', 'repetitions', 'min', 'median', 'max', 'events scanned/s (median)', 'data fetched / scan', 'other CPU (cores)'],
      [
        [
          'auditlake `mergedSearch` over the Iceberg table (S3)',
          int(v.qScan.count),
          ms(v.qScan.minMs),
          ms(v.qScan.p50Ms),
          ms(v.qScan.maxMs),
          int(v.events / (v.qScan.p50Ms / 1000)),
          mib(v.qScanBytes.dataBytes),
          cores(v.qScanCpu.otherCores),
        ],
        [
          `DuckDB, ${v.duckThreads} threads (reference)`,
          int(v.duck.count),
          ms(v.duck.minMs),
          ms(v.duck.p50Ms),
          ms(v.duck.maxMs),
          int(v.events / (v.duck.p50Ms / 1000)),
          `${mib(v.tableDataBytes)} (local files)`,
          cores(v.duckCpu.otherCores),
        ],
        ['DuckDB, 1 thread (context)', int(v.duckSingle.count), ms(v.duckSingle.minMs), ms(v.duckSingle.p50Ms), ms(v.duckSingle.maxMs), int(v.events / (v.duckSingle.p50Ms / 1000)), `${mib(v.tableDataBytes)} (local files)`, 'n/a'],
      ],
    ),
    '',
    `Ours ÷ DuckDB (medians): **${(v.qScan.p50Ms / v.duck.p50Ms).toFixed(2)}×**; ÷ DuckDB on 1 thread: ${(v.qScan.p50Ms / v.duckSingle.p50Ms).toFixed(2)}×. ` +
      `"Other CPU" is the rest of the machine while the figure was measured, from /proc/stat.`,
    '',
  ];
  const scans = [['`user=X`, a generated user at random', v.userScan], ['`table=X`, a generated table name at random', v.tableScan]] as const;
  if (v.userScan !== undefined || v.tableScan !== undefined) {
    parts.push(
      `Filtered scans: ${config.tierRequests} requests each, no time range, limit ${config.searchLimit}, newest first over the whole table — what an investigator asks ` +
        `("what did this user do", "who touched this table"). Row groups whose footer sketch rules the user or table out are skipped without a fetch; the others ` +
        `have the filter's column read first, then the rest of their rows only if one matches.`,
      '',
      table(
        ['filtered scan', 'requests', 'p50', 'p95', 'max', 'data fetched / request', 'row groups ruled out / request', 'events returned (mean)'],
        scans.flatMap(([name, scan]) =>
          scan === undefined
            ? []
            : [[name, int(scan.latency.count), ms(scan.latency.p50Ms), ms(scan.latency.p95Ms), ms(scan.latency.maxMs), kib(scan.bytes.dataBytes), scan.groupsPrunedMean.toFixed(0), scan.matchedMean.toFixed(0)]],
        ),
      ),
      '',
    );
  }
  const f = t.file;
  if (f !== undefined) {
    parts.push(
      '### Data file encoding',
      '',
      `One sweep batch, ${int(f.events)} generated events (seed ${config.seed + 2}, one day)${f.chainColumns ? ', with the record chain\'s columns (record hash, chain hash, field check) as a node tiers them by default' : ''}, encoded ` +
        (f.poolThreads === undefined
          ? `by \`encodeAuditParquet\` (${f.codec}, the tier's codec) `
          : `by the tier encoder pool of ${f.poolThreads} worker threads (\`TierEncodePool.encode\`, what a node with \`auditlake.audit.tier.encode.threads\` ≥ 2 uses — the default is one: the events handed to a worker, the file's columns split between two threads and assembled; the time includes handing over the events and the file back), and on one thread by \`encodeAuditParquet\` for context, the same bytes (${f.codec}, the tier's codec), `) +
        `and, as the reference, written by DuckDB with \`COPY … (FORMAT parquet, COMPRESSION zstd)\` from the same rows (loaded from our file into a DuckDB ` +
        `table before timing; DuckDB's time includes writing a local file). ${f.write.count} alternating rounds after one warm-up round.` +
        (f.bytesWithoutSketches === undefined ? '' : ` Ours includes the footer's row-group sketches: ${int(f.bytes - f.bytesWithoutSketches)} bytes, ${(((f.bytes - f.bytesWithoutSketches) / f.bytesWithoutSketches) * 100).toFixed(1)}% of the file without them.`),
      '',
      table(
        ['writer', 'bytes', 'bytes/event', 'write p50', 'min', 'max'],
        [
          ...(f.poolThreads === undefined
            ? [[`auditlake (${f.codec}, one thread)`, int(f.bytes), (f.bytes / f.events).toFixed(1), ms(f.write.p50Ms), ms(f.write.minMs), ms(f.write.maxMs)]]
            : [
                [`auditlake (${f.codec}), encoder pool, ${f.poolThreads} threads`, int(f.bytes), (f.bytes / f.events).toFixed(1), ms(f.write.p50Ms), ms(f.write.minMs), ms(f.write.maxMs)],
                ...(f.writeOneThread === undefined ? [] : [[`auditlake (${f.codec}), \`encodeAuditParquet\`, one thread (context)`, int(f.bytes), (f.bytes / f.events).toFixed(1), ms(f.writeOneThread.p50Ms), ms(f.writeOneThread.minMs), ms(f.writeOneThread.maxMs)]]),
              ]),
          [`DuckDB zstd, ${f.duckThreads} threads (reference)`, int(f.duckBytes), (f.duckBytes / f.events).toFixed(1), ms(f.duckWrite.p50Ms), ms(f.duckWrite.minMs), ms(f.duckWrite.maxMs)],
        ],
      ),
      '',
    );
  }
  return parts.join('\n');
}

export function tieringKnobRows(config: BenchConfig | undefined): string[][] {
  return [
    knobRow('BENCH_TIER_SWEEP_EVENTS', config?.tierSweepEvents, DEFAULTS.tierSweepEvents),
    knobRow('BENCH_TIER_SWEEP_DAYS', config?.tierSweepDays, DEFAULTS.tierSweepDays),
    knobRow('BENCH_TIER_SWEEP_BATCH', config?.tierSweepBatch, DEFAULTS.tierSweepBatch),
    knobRow('BENCH_TIER_TABLE_EVENTS', config?.tierTableEvents, DEFAULTS.tierTableEvents),
    knobRow('BENCH_TIER_TABLE_DAYS', config?.tierTableDays, DEFAULTS.tierTableDays),
    knobRow('BENCH_TIER_REQUESTS', config?.tierRequests, DEFAULTS.tierRequests),
  ];
}
