import { DEFAULTS, type BenchConfig } from './bench-config.js';
import type { IntegrityFigures } from './integrity-bench.js';
import { cores, int, knobRow, metWord, ms, pct, table } from './report-format.js';

/** The issue's targets for the record chain and the verifier. */
export const INTEGRITY_TARGETS = {
  /** Ingest with the chain on keeps at least this share of ingest without it (same run). */
  chainOnShareMin: 0.9,
  verifyRecordsPerSecondMin: 200_000,
} as const;

interface Row {
  figure: string;
  measured: string;
  reference: string;
  target: string;
  met: string;
}

export function integritySummaryRows(f: IntegrityFigures, config: BenchConfig): Row[] {
  const share = f.chainOn.eventsPerSecond / f.chainOff.eventsPerSecond;
  return [
    {
      figure: `HTTP ingest with the record chain on, ${config.ingestBatchSize}-event batches, ${config.ingestConcurrency} in flight (best of ${f.chainOnRounds.length})`,
      measured: `${int(f.chainOn.eventsPerSecond)} events/s (${pct(share)} of chain off)`,
      reference: `chain off, same run (best of ${f.chainOffRounds.length}): ${int(f.chainOff.eventsPerSecond)} events/s`,
      target: `≥ ${pct(INTEGRITY_TARGETS.chainOnShareMin)} of chain off`,
      met: metWord(share >= INTEGRITY_TARGETS.chainOnShareMin),
    },
    {
      figure: `\`auditlake verify --path\` offline from the bucket (embedded S3 endpoint), ${int(f.verify.records)} records, ${f.verify.checkpoints} checkpoints`,
      measured: `${int(f.verify.offlineRecordsPerSecond)} records/s (${ms(f.verify.offlineMs)}${f.verify.threads === undefined ? '' : `, ${f.verify.threads} worker threads`})`,
      reference:
        (f.verify.oneThread === undefined ? '' : `\`--threads 0\` (no workers), same run: ${int(f.verify.oneThread.recordsPerSecond)} records/s; `) +
        `the verifier alone, records in memory: ${int(f.verify.inMemoryRecordsPerSecond)} records/s`,
      target: `≥ ${int(INTEGRITY_TARGETS.verifyRecordsPerSecondMin)} records/s`,
      met: metWord(f.verify.offlineRecordsPerSecond >= INTEGRITY_TARGETS.verifyRecordsPerSecondMin),
    },
  ];
}

export function integrityNotes(f: IntegrityFigures): string[] {
  const out: string[] = [];
  const share = f.chainOn.eventsPerSecond / f.chainOff.eventsPerSecond;
  if (share < INTEGRITY_TARGETS.chainOnShareMin) out.push(`**Target missed:** ingest with the record chain is ${pct(share)} of ingest without it (target ≥ ${pct(INTEGRITY_TARGETS.chainOnShareMin)}).`);
  if (f.verify.offlineRecordsPerSecond < INTEGRITY_TARGETS.verifyRecordsPerSecondMin) {
    out.push(`**Target missed:** offline verify checked ${int(f.verify.offlineRecordsPerSecond)} records/s (target ≥ ${int(INTEGRITY_TARGETS.verifyRecordsPerSecondMin)}).`);
  }
  return out;
}

export function integrityOtherCores(f: IntegrityFigures): number[] {
  return [...f.chainOnRounds, ...f.chainOffRounds].map((r) => r.cpu.otherCores).concat(f.verify.offlineCpu.otherCores).filter((n): n is number => n !== undefined);
}

/** µs of node CPU per event, or n/a (a result from before it was measured, or not Linux). */
function cpuPerEvent(us: number | undefined): string {
  return us === undefined || !Number.isFinite(us) ? 'n/a' : `${us.toFixed(1)} µs`;
}

function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/**
 * What the chain costs in node CPU per event: the medians of the rounds (CPU per event moves much
 * less with other load than events/s, so it says what the chain costs on a busy machine too).
 */
export function chainCpuCost(f: IntegrityFigures): { offUs: number; onUs: number } | undefined {
  const known = (rounds: IntegrityFigures['chainOnRounds']) => rounds.map((r) => r.nodeCpuUsPerEvent).filter((us): us is number => us !== undefined && Number.isFinite(us));
  const offUs = median(known(f.chainOffRounds));
  const onUs = median(known(f.chainOnRounds));
  return offUs === undefined || onUs === undefined ? undefined : { offUs, onUs };
}

export function integrityMarkdown(f: IntegrityFigures): string {
  const rounds = f.chainOnRounds.map((on, i) => {
    const off = f.chainOffRounds[i] as (typeof f.chainOffRounds)[number];
    return [
      String(i + 1),
      int(off.eventsPerSecond),
      int(on.eventsPerSecond),
      pct(on.eventsPerSecond / off.eventsPerSecond),
      cpuPerEvent(off.nodeCpuUsPerEvent),
      cpuPerEvent(on.nodeCpuUsPerEvent),
      cores(off.cpu.otherCores),
      cores(on.cpu.otherCores),
    ];
  });
  const cost = chainCpuCost(f);
  return [
    '## Integrity (record chain and verify)',
    '',
    'Ingest with the record chain off (`auditlake.audit.integrity.chain.enabled=false`) and on, alternating in each round. ' +
      'Node CPU per event is this process (the node in it, every thread) less the client worker thread, over the measured time:',
    '',
    table(['round', 'chain off, events/s', 'chain on, events/s', 'on ÷ off', 'node CPU/event (off)', 'node CPU/event (on)', 'other CPU (off)', 'other CPU (on)'], rounds),
    '',
    ...(cost === undefined
      ? []
      : [`Medians over the rounds: the chain costs ${cpuPerEvent(cost.onUs - cost.offUs)} of node CPU per event (${cpuPerEvent(cost.offUs)} → ${cpuPerEvent(cost.onUs)}, ${pct(cost.onUs / cost.offUs - 1)} more).`, '']),
    `Verify: ${f.verify.message}; offline from the bucket ${ms(f.verify.offlineMs)} (${int(f.verify.offlineRecordsPerSecond)} records/s, ` +
      `this process ${cores(f.verify.offlineCpu.ownCores)} cores, others ${cores(f.verify.offlineCpu.otherCores)})` +
      (f.verify.oneThread === undefined ? '' : `; with \`--threads 0\` ${ms(f.verify.oneThread.ms)} (${int(f.verify.oneThread.recordsPerSecond)} records/s, this process ${cores(f.verify.oneThread.cpu.ownCores)} cores)`) +
      `; the verifier alone over the records in memory ${ms(f.verify.inMemoryMs)}.`,
  ].join('\n');
}

/** The integrity part's knobs, as the run that measured it used them. */
export function integrityKnobRows(config: BenchConfig | undefined): string[][] {
  return [
    knobRow('BENCH_INTEGRITY_ROUNDS', config?.integrityRounds, DEFAULTS.integrityRounds),
    knobRow('BENCH_INTEGRITY_VERIFY_EVENTS', config?.integrityVerifyEvents, DEFAULTS.integrityVerifyEvents),
  ];
}
