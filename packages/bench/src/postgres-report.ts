import { DEFAULTS, type BenchConfig } from './bench-config.js';
import type { LatencyStats } from './latency-stats.js';
import { QUIET_BUSY_CORES, QUIET_WINDOW_MS, type VersusResult } from './postgres-versus-bench.js';
import { int, knobRow, metWord, ms, table } from './report-format.js';

/** The figures of the `postgres` part: measured, or why they could not be. */
export type PostgresFigures = { measured: VersusResult } | { skipped: string };

/** The issue's targets against PostgreSQL in the same run. */
export const POSTGRES_TARGETS = {
  /** auditlake's best ingest ÷ PostgreSQL's best, at least. */
  ingestBestRatioMin: 1,
  dayWindowP50RatioMax: 1.5,
  user7DaysP50RatioMax: 2,
  /** `q` matching nothing over the local store, absolute. */
  qNoMatchP50MsMax: 20,
  /** auditlake's disk ÷ PostgreSQL's with its trigram index, at most. */
  diskRatioMax: 0.6,
} as const;

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
const evs = (n: number) => `${int(n)} ev/s`;
const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : 'n/a');
const p50 = (s: LatencyStats | undefined) => (s === undefined ? 'n/a' : ms(s.p50Ms));

/** Rows for the summary table: figure, measured, reference, target, met. */
export function postgresSummaryRows(figures: PostgresFigures): Array<{ figure: string; measured: string; reference: string; target: string; met: string }> {
  if ('skipped' in figures) return [{ figure: 'versus PostgreSQL', measured: 'not measured', reference: figures.skipped, target: '—', met: '—' }];
  const { auditlake: a, postgres: p, postgresTrigram: t } = figures.measured;
  return [
    {
      figure: 'durable ingest vs PostgreSQL (best)',
      measured: evs(a.ingestBestEventsPerSecond),
      reference: `PostgreSQL ${evs(p.ingestBestEventsPerSecond)}`,
      target: `≥ ${POSTGRES_TARGETS.ingestBestRatioMin}× PostgreSQL`,
      met: metWord(a.ingestBestEventsPerSecond >= POSTGRES_TARGETS.ingestBestRatioMin * p.ingestBestEventsPerSecond),
    },
    {
      figure: 'one-day window p50 vs PostgreSQL',
      measured: ms(a.dayWindow.p50Ms),
      reference: `PostgreSQL ${ms(p.dayWindow.p50Ms)}`,
      target: `≤ ${POSTGRES_TARGETS.dayWindowP50RatioMax}× PostgreSQL`,
      met: metWord(a.dayWindow.p50Ms <= POSTGRES_TARGETS.dayWindowP50RatioMax * p.dayWindow.p50Ms),
    },
    {
      figure: 'user=X within 7 days p50 vs PostgreSQL',
      measured: ms(a.user7Days.p50Ms),
      reference: `PostgreSQL ${ms(p.user7Days.p50Ms)}`,
      target: `≤ ${POSTGRES_TARGETS.user7DaysP50RatioMax}× PostgreSQL`,
      met: metWord(a.user7Days.p50Ms <= POSTGRES_TARGETS.user7DaysP50RatioMax * p.user7Days.p50Ms),
    },
    {
      figure: '`q` matching nothing, local, p50',
      measured: ms(a.qNoMatch.p50Ms),
      reference: `PostgreSQL ${ms(t.qNoMatch.p50Ms)} with pg_trgm, ${ms(p.qNoMatch.p50Ms)} without`,
      target: `≤ ${POSTGRES_TARGETS.qNoMatchP50MsMax} ms`,
      met: metWord(a.qNoMatch.p50Ms <= POSTGRES_TARGETS.qNoMatchP50MsMax),
    },
    {
      figure: 'disk vs PostgreSQL with pg_trgm',
      measured: mb(a.diskBytes),
      reference: `PostgreSQL ${mb(t.diskBytes)} (${mb(p.diskBytes)} without pg_trgm)`,
      target: `≤ ${POSTGRES_TARGETS.diskRatioMax}× PostgreSQL`,
      met: metWord(a.diskBytes <= POSTGRES_TARGETS.diskRatioMax * t.diskBytes),
    },
  ];
}

/** When the searches began: after a wait for both systems to finish their background work, if the run had one. */
function quietText(wait: VersusResult['searchQuietWait']): string {
  if (wait === undefined) return 'right after the last ingest round';
  const busy = wait.busyCores === undefined ? '' : ` (${wait.busyCores.toFixed(2)} cores busy)`;
  return wait.quiet
    ? `once the machine was quiet after the last ingest round (${(wait.waitedMs / 1000).toFixed(1)} s later, at most ${QUIET_BUSY_CORES} cores busy over ${QUIET_WINDOW_MS / 1000} s${busy}: both systems' background work after a load, LevelDB's compactions and PostgreSQL's autovacuum and checkpoints, done)`
    : `after waiting ${(wait.waitedMs / 1000).toFixed(1)} s for a quiet machine in vain${busy}`;
}

/** When each ingest round began, if the run waited for a quiet machine before each. */
function ingestQuietText(waits: VersusResult['ingestQuietWaits']): string {
  if (waits === undefined || waits.length === 0) return '';
  const longest = Math.max(...waits.map((wait) => wait.waitedMs));
  const busy = waits.filter((wait) => !wait.quiet).length;
  return ` Each ingest round began once the machine was quiet (at most ${QUIET_BUSY_CORES} cores busy over ${QUIET_WINDOW_MS / 1000} s; the longest wait ${(longest / 1000).toFixed(1)} s${busy > 0 ? `, ${busy} of ${waits.length} waits in vain` : ''}): a round run right after the other system's took the CPU of that system's background work after a load.`;
}

/** The report's section: the issue's side-by-side table, then how it was measured. */
export function postgresMarkdown(figures: PostgresFigures, config: BenchConfig): string {
  const lines = ['## Search and ingest against PostgreSQL', ''];
  if ('skipped' in figures) {
    lines.push(`Not measured: ${figures.skipped}`, '');
    return lines.join('\n');
  }
  const r = figures.measured;
  const { auditlake: a, postgres: p, postgresTrigram: t } = r;
  lines.push(
    `${int(r.events)} generated events (seed ${config.seed}, with client event ids) over ${r.days} days, into a real \`auditlake start\` process ` +
      `(default settings) over HTTP and into a throwaway ${r.postgresVersion} (\`fsync=on\`, \`synchronous_commit=on\`; one table with a ` +
      `primary key on event_id and indexes on ts and (user_id, ts); a batch is one \`INSERT … ON CONFLICT DO NOTHING\`), ` +
      `${config.pgRounds} alternating ingest rounds of ${config.ingestBatchSize}-event batches, ${config.ingestConcurrency} in flight, each into a fresh ` +
      `store and table.${ingestQuietText(r.ingestQuietWaits)} The searches then alternate request by request on the last round's data, newest first, limit ${config.searchLimit}, ` +
      `${quietText(r.searchQuietWait)}; before the one-day and the user searches are measured, each system answers ${int(config.pgWarmupRequests)} unmeasured requests of that kind (warm-up: JIT, caches, connections, allocator heaps; the first ${int(config.pgRequests)} of them are the "first requests after the load" rows), then ${int(config.pgRequests)} measured. ` +
      `PostgreSQL's \`q\` is \`lower(user_id, action, resource, tables, query, details joined by newlines) LIKE '%…%'\`, without and then with a ` +
      `pg_trgm GIN index on that expression (built in ${ms(t.indexBuildMs)}). The rare needle is "${r.qRareNeedle}" (${int(r.qRareMatches)} events). ` +
      `Disk: auditlake's whole data directory; PostgreSQL's \`pg_total_relation_size\` of the table (heap, TOAST and indexes, not WAL). ` +
      `Server CPU: the auditlake process, or the postmaster and every process it started, in the best round.`,
    '',
    table(
      ['figure', 'auditlake', 'PostgreSQL', 'auditlake ÷ PostgreSQL'],
      [
        [
          'durable ingest (best / median)',
          `${evs(a.ingestBestEventsPerSecond)} / ${evs(a.ingestMedianEventsPerSecond)}`,
          `${evs(p.ingestBestEventsPerSecond)} / ${evs(p.ingestMedianEventsPerSecond)}`,
          `${ratio(a.ingestBestEventsPerSecond, p.ingestBestEventsPerSecond)} / ${ratio(a.ingestMedianEventsPerSecond, p.ingestMedianEventsPerSecond)}`,
        ],
        ['ingest rounds', a.ingestRoundsEventsPerSecond.map(evs).join(', '), p.ingestRoundsEventsPerSecond.map(evs).join(', '), ''],
        ['server CPU per event', `${a.serverCpuUsPerEvent.toFixed(1)} µs`, `${p.serverCpuUsPerEvent.toFixed(1)} µs`, ratio(a.serverCpuUsPerEvent, p.serverCpuUsPerEvent)],
        ['one-day window, p50 (p95)', `${p50(a.dayWindow)} (${ms(a.dayWindow.p95Ms)})`, `${p50(p.dayWindow)} (${ms(p.dayWindow.p95Ms)})`, ratio(a.dayWindow.p50Ms, p.dayWindow.p50Ms)],
        ['`user=X` within 7 days, p50 (p95)', `${p50(a.user7Days)} (${ms(a.user7Days.p95Ms)})`, `${p50(p.user7Days)} (${ms(p.user7Days.p95Ms)})`, ratio(a.user7Days.p50Ms, p.user7Days.p50Ms)],
        ...coldRow('one-day window, first requests after the load, p50 (p95)', a.dayWindowCold, p.dayWindowCold),
        ...coldRow('`user=X` within 7 days, first requests after the load, p50 (p95)', a.user7DaysCold, p.user7DaysCold),
        ['`q` matching nothing, p50', p50(a.qNoMatch), `${p50(t.qNoMatch)} with pg_trgm (${p50(p.qNoMatch)} without)`, ratio(a.qNoMatch.p50Ms, t.qNoMatch.p50Ms)],
        ['`q` matching the rare needle, p50', p50(a.qRare), `${p50(t.qRare)} (pg_trgm)`, ratio(a.qRare?.p50Ms ?? Number.NaN, t.qRare.p50Ms)],
        ['disk', mb(a.diskBytes), `${mb(p.diskBytes)} (${mb(t.diskBytes)} with pg_trgm)`, `${ratio(a.diskBytes, p.diskBytes)} (${ratio(a.diskBytes, t.diskBytes)})`],
      ],
    ),
    '',
  );
  return lines.join('\n');
}

/** A warm-up figure's row, when the run measured it. */
function coldRow(label: string, ours: LatencyStats | undefined, theirs: LatencyStats | undefined): string[][] {
  if (ours === undefined || theirs === undefined) return [];
  return [[label, `${ms(ours.p50Ms)} (${ms(ours.p95Ms)})`, `${ms(theirs.p50Ms)} (${ms(theirs.p95Ms)})`, ratio(ours.p50Ms, theirs.p50Ms)]];
}

export function postgresKnobRows(config: BenchConfig | undefined): string[][] {
  return [
    knobRow('BENCH_PG_EVENTS', config?.pgEvents, DEFAULTS.pgEvents),
    knobRow('BENCH_PG_ROUNDS', config?.pgRounds, DEFAULTS.pgRounds),
    knobRow('BENCH_PG_REQUESTS', config?.pgRequests, DEFAULTS.pgRequests),
    knobRow('BENCH_PG_WARMUP_REQUESTS', config?.pgWarmupRequests, DEFAULTS.pgWarmupRequests),
    knobRow('BENCH_PG_QREPS', config?.pgQRepetitions, DEFAULTS.pgQRepetitions),
  ];
}
