import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { TieredEvent } from '@auditlake/format';
import { composeStoredEvent, eraseRecordFields } from '@auditlake/integrity';
import { readTieredSuffix, type TierSource, type Watermark } from '@auditlake/lake';
import { AuditError, AuditErrorCode, isSelfRecord, UPDATE_SETTINGS_ACTION, type EncodedEvent } from '@auditlake/model';
import type { AuditStore, TermStart } from '@auditlake/store';
import { addTargets, isErasureRecord, targetKey, type ErasureTarget } from './tier-erasure.js';

/** The most entries a sweep adopts from the tier at once (they are read into memory first). */
export const TIER_ADOPTION_ENTRIES_MAX = 200_000;

/** How far below the end of the shorter history the first look for the common prefix reaches; it doubles until found. */
const FIRST_LOOK_ENTRIES = 1024;

/** What adopting the tier's suffix did. */
export interface TierAdoption {
  /** The last seq where this log and the tier agreed: everything after it is the tier's now. */
  commonSeq: number;
  /** Entries taken from the tier into the log. */
  adopted: number;
  /** This log's own entries after `commonSeq`, moved to the outbox to be ordered again. */
  moved: number;
  /** Where the adoption's own record went, when it was given one (AdoptOptions.record). */
  recordSeq?: number;
  /**
   * Seqs of the settings records (`audit:UpdateSettings`) among the adopted entries: the changes
   * they state were made on the log that tiered them, and an adoption takes entries, not that
   * log's settings, so they are not in force here. The adoption's record names them.
   */
  settingsRecordSeqs?: number[];
}

/**
 * The record of an adoption, ordered after the adopted entries in the same write, under
 * `term` (see AuditStore.adoptSuffix): a cluster reserves a term above every one handed out,
 * so the adopter's log is the most up to date and the next election cannot undo the adoption.
 */
export interface AdoptionRecord {
  term: number;
  /** Built once the cut is known. */
  event: (adoption: Omit<TierAdoption, 'recordSeq'>) => EncodedEvent;
}

/**
 * The tier holds a row of a term not before the adopting leader's: no record of a log this
 * leader succeeded, or terms handed out again (the coordinator lost its data, and the node that
 * led first had lost its own). `term` is the row's, which a cluster takes in so that its next
 * leader's term is above it.
 */
export class TierTermNotBefore extends AuditError {
  readonly term: number;

  constructor(seq: number, term: number, termNow: number) {
    super(AuditErrorCode.TIER_TARGET_UNUSABLE, `the tier's row at seq ${seq} has term ${term}, not before this leader's term ${termNow}`);
    this.term = term;
  }
}

/** What an adoption must know of the leader doing it. */
export interface AdoptOptions {
  /** The most entries it may read from the tier. */
  entriesMax: number;
  /** The term this leader leads: every adopted row must come from an earlier one (or this one, see soleWriter). */
  termNow: number;
  /**
   * A node without a coordinator: it alone ever ordered events, all in its one term, so the
   * tier's rows of that term are its own log's (lost here: a disk that failed, a data dir
   * restored from an older copy). Rows of `termNow` are then taken too; a later term still
   * refuses. Without it a single node, always in term 0, could never adopt.
   */
  soleWriter?: boolean;
  /** Asked inside the store's exclusive step, right before anything is cut: false (no longer leading) refuses. */
  mayAdopt: () => boolean;
  /** Ordered after the adopted entries, in the same write. */
  record?: AdoptionRecord;
  /** The leader's clock (for the record's ingestTs). */
  now?: () => number;
}

/**
 * Makes the log hold what the tier holds through `watermark`, as a standby takes its leader's
 * log: the tier is the record of a log that tiered entries this log lacks (a leader that died
 * before any survivor received them, or this node's own log lost). Finds the last seq where
 * the two agree — the same chain hash there (which commits to everything before it), or, with
 * no chain, the same term (log matching: a term orders each seq once) and event — then has the
 * store replace what follows with the tier's rows, checked against this log's chain, and move
 * its own entries from there to the outbox so they are ordered again after them. Seqs then
 * mean the same events in the log and the tier again, and the sweep goes on from the watermark.
 * Throws AUDIT_TIER_TARGET_UNUSABLE when more than `entriesMax` entries would have to be read,
 * or a row comes from a term not before this leader's (no honest tier holds one).
 */
export async function adoptTierSuffix(store: AuditStore, source: TierSource, watermark: Watermark, options: AdoptOptions): Promise<TierAdoption> {
  const entriesMax = options.entriesMax;
  const top = watermark.seq;
  const shorter = Math.min(store.position.lastSeq, top);
  let from = Math.max(0, shorter - FIRST_LOOK_ENTRIES);
  for (;;) {
    if (top - from > entriesMax) {
      throw new AuditError(
        AuditErrorCode.TIER_TARGET_UNUSABLE,
        `${source.name} is tiered through seq ${top} and this node's log differs from it before seq ${from + 1}: adopting the tier's entries would take more than ${entriesMax}`,
      );
    }
    const rows = await readTieredSuffix(source, from, top);
    // A tier may start above seq 1 (tiering turned on late, or a target switched): nothing
    // below its first row can be compared, and the store checks that row's chain link.
    const floor = (rows[0]?.seq ?? top + 1) - 1;
    const common = await lastAgreeing(store, rows, floor, shorter);
    if (common !== undefined || floor > from || from === 0) return adopt(store, rows.slice((common ?? floor) - floor), common ?? floor, options);
    from = Math.max(0, shorter - 2 * (shorter - from));
  }
}

/** The last seq in (from, through] where the log's entry and the tier's row (rows[0] is seq from + 1) agree; undefined when none does. */
async function lastAgreeing(store: AuditStore, rows: readonly TieredEvent[], from: number, through: number): Promise<number | undefined> {
  for (let seq = through; seq > from; seq--) {
    const row = rows[seq - from - 1] as TieredEvent;
    const entry = await store.getBySeq(seq);
    // An entry retention deleted was tiered from this log: its term is still known, and log matching holds for it.
    if (entry === undefined ? store.termAt(seq) === row.term : agrees(entry, row)) return seq;
  }
  return undefined;
}

function agrees(entry: { eventId: string; term: number; chainHash?: string | undefined }, row: TieredEvent): boolean {
  if (entry.chainHash !== undefined && row.chainHash !== undefined) return entry.chainHash === row.chainHash;
  return entry.term === row.term && entry.eventId === row.eventId;
}

async function adopt(store: AuditStore, rows: readonly TieredEvent[], commonSeq: number, options: AdoptOptions): Promise<TierAdoption> {
  // The log holds the tier's record through its watermark already: nothing of its own is moved.
  if (rows.length === 0) return { commonSeq, adopted: 0, moved: 0 };
  // The targets of the adopted erasure records, merged as the tier's erasure pass merges them.
  const erased = new Map<string, ErasureTarget>();
  for (const row of rows) if (isErasureRecord(row)) addTargets(erased, { ...row, seq: row.seq as number });
  const starts: TermStart[] = [];
  const entries: Buffer[] = [];
  const settingsRecordSeqs: number[] = [];
  for (const [i, row] of rows.entries()) {
    if (i % ADOPT_YIELD_ROWS === ADOPT_YIELD_ROWS - 1) await yieldToEventLoop();
    const seq = row.seq as number;
    const term = row.term as number;
    // A row from a term not before this leader's is no record of a log this one succeeded.
    if (term > options.termNow || (term === options.termNow && options.soleWriter !== true)) throw new TierTermNotBefore(seq, term, options.termNow);
    if (starts.at(-1)?.term !== term) starts.push({ firstSeq: seq, term });
    if (isSelfRecord(row, UPDATE_SETTINGS_ACTION)) settingsRecordSeqs.push(seq);
    // The tier's rows may still hold values an adopted erasure record names (its leader died before rewriting them).
    const target = erased.get(targetKey(row.eventId, seq));
    const stored = target === undefined ? row : (eraseRecordFields(row, [...target.fields]) ?? row);
    entries.push(Buffer.from(composeStoredEvent({ ...stored, seq, term }), 'utf8'));
  }
  const record = options.record;
  const closing =
    record === undefined ? undefined : { term: record.term, nowMs: (options.now ?? Date.now)(), event: (moved: number) => record.event({ commonSeq, adopted: entries.length, moved, ...(settingsRecordSeqs.length > 0 ? { settingsRecordSeqs } : {}) }) };
  const result = await store.adoptSuffix(commonSeq + 1, entries, starts, options.mayAdopt, closing);
  return { commonSeq, adopted: result.adopted, moved: result.moved, ...(result.closingSeq === undefined ? {} : { recordSeq: result.closingSeq }), ...(settingsRecordSeqs.length > 0 ? { settingsRecordSeqs } : {}) };
}

/** Rows composed between turns of the event loop (an adoption may compose 200,000). */
const ADOPT_YIELD_ROWS = 2_000;

