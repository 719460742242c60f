import type { KeyObject } from 'node:crypto';
import { checkpointHash, checkpointSignatureValid, parseSignedCheckpoint, type SignedCheckpoint } from './checkpoint.js';
import { FoundCheckpoints } from './found-checkpoints.js';
import { parseErasureDetails } from './integrity-events.js';
import { parsePublishedKey, publicKeyId } from './node-key.js';
import { checkRecord, type CheckedDigest, type CheckedRecord, type VerifyRecord } from './checked-record.js';
import { CHECKED_FIELDS, type HashedField } from './record-fields.js';
import { RecentBySeq } from './recent-records.js';
import { saltIndex, SALTED_FIELDS } from './record-salt.js';
import { chainHash, GENESIS_CHAIN_HASH, RecordHasher, recordHashOf, splitFieldCheck } from './record-hasher.js';

/** Records a node deleted by retention without tiering them, with the chain hash at the range's end. */
export interface PrunedRange {
  fromSeq: number;
  toSeq: number;
  /** chain_hash of the record at `toSeq` (lets the chain continue after the hole). */
  chainHash?: string | undefined;
}

/** A checkpoint found outside the records (a digest object, a snapshot summary, a node). */
export interface FoundCheckpoint {
  checkpoint: SignedCheckpoint;
  /** Where it was found, for messages. */
  where: string;
  /**
   * The seq of the checkpoint record holding it, when the source names it (a node's listing).
   * Otherwise taken to be right after the seq it covers, where the leader nearly always appends it.
   */
  recordSeq?: number;
}

/** A public key shown outside the chain (a node's listing, a `_integrity/keys/` object). */
export interface ShownKey {
  /** The published key's text ({v, keyId, nodeId, publicKey}). */
  text: string;
  where: string;
}

export interface ChainVerifierOptions {
  /**
   * Keys to trust (`--public-key` files). When given, a checkpoint must be signed by one of
   * them; otherwise by a key registered in the chain or shown by the source (whose id must be
   * its fingerprint).
   */
  pinnedKeys?: readonly KeyObject[];
  shownKeys?: readonly ShownKey[];
  checkpoints?: readonly FoundCheckpoint[];
  pruned?: readonly PrunedRange[];
  /**
   * Where the history is known to begin (the first seq a tier was given, or 1): records missing
   * before its first record are then a break, not history kept elsewhere.
   */
  startSeq?: number;
  /**
   * The operator says this history began before the record chain (`verify --pre-chain-holes`):
   * seqs missing before the chain began then count as not verifiable (preChainAbsent) instead
   * of missing. Not the default: from the records alone, a history upgraded from a version
   * before the chain, whose retention deleted records without declaring them, looks the same as
   * one whose first chained records were cut where the chain was later switched off and on
   * again (a review found that cut passing).
   */
  preChainHoles?: boolean;
  /** Where the source says its log ends (a node's head): the history must reach it. */
  head?: { seq: number; chainHash: string | undefined; where: string };
  /**
   * The records are one copy of the history (a tier read alone), named so: a record found twice
   * is then a duplicated row — an engine reading that copy counts it twice — not the same record
   * read from two places (a node and its tier), which is ignored.
   */
  oneCopy?: string;
}

export type BreakKind =
  | 'altered'
  | 'missing'
  | 'reordered'
  | 'conflict'
  | 'chain'
  | 'truncated'
  | 'bad-signature'
  | 'unknown-key'
  | 'replaced-key'
  | 'checkpoint-mismatch'
  | 'checkpoint-chain'
  | 'foreign-chain'
  | 'unsigned'
  | 'empty'
  | 'added'
  | 'duplicated';

/** The first way the history fails to verify, in words and in parts. */
export interface IntegrityBreak {
  kind: BreakKind;
  /** Where in the log: the record's seq, or the seq a checkpoint covers. */
  seq: number;
  message: string;
  eventId?: string;
  fields?: string[];
  toSeq?: number;
}

export interface VerifyReport {
  ok: boolean;
  /** Distinct records verified (legacy records not included). */
  records: number;
  firstSeq: number | undefined;
  lastSeq: number | undefined;
  checkpoints: number;
  erasedFields: number;
  /** Records from before the chain existed (no chain fields): counted, not verifiable. */
  legacyRecords: number;
  /** Records the source declared deleted by retention (not a break). */
  prunedRecords: number;
  /** The same record seen twice (identical copies). */
  duplicates: number;
  /** Rows a tier holds without a seq (written before the chain existed): counted, not verifiable. */
  rowsWithoutSeq: number;
  /**
   * Seqs before the chain began that the history does not hold (deleted by a version that kept
   * no record of what its retention deleted, or tiered without a seq): not verifiable, as the
   * records of that time are not, so not a break.
   */
  preChainAbsent: number;
  chainId: string | undefined;
  /** Key ids that signed the verified checkpoints. */
  keyIds: string[];
  /** Every break found, the first (lowest seq) first. */
  breaks: IntegrityBreak[];
  /** `verified N records, …` or the first break. */
  message: string;
}

interface Processed {
  seq: number;
  eventId: string;
  /** Recomputed from the values. */
  recordHash: string;
  /** As stored with the record. */
  storedRecordHash: string | undefined;
  /** As stored with the record. */
  storedFieldCheck: string | undefined;
  chainHash: string | undefined;
}

/** The distinct checkpoints a verifier found (ChainVerifier's #distinct). */
interface DistinctCheckpoints {
  /** Per entry, the entry that stands for its copies. */
  representative: Uint32Array;
  /** The representatives, by the seq they cover. */
  ordered: Uint32Array;
  /** By representative: 1 when a copy was compared with the chained record it covers. */
  matched: Uint8Array;
  /** By representative: what that record held, where it differed. */
  mismatches: Map<number, { chainHash: string | undefined }>;
}

/** How many records a chained record is compared against when looking for a reordering. */
const REORDER_WINDOW = 16;
/** Chain hashes kept for checkpoints that arrive after the record they cover. */
const RECENT_MAX = 1 << 16;

/**
 * Verifies one history: records fed in ascending seq order (identical duplicates allowed),
 * then {@link finish}. It recomputes every record hash from the record's values, links the
 * chain, checks every checkpoint's signature, key, place in the chain and link to the previous
 * checkpoint, that the history reaches its last checkpoint, and that every erased field was
 * erased by an erasure record. The report names the first break, in seq order.
 */
export class ChainVerifier {
  readonly #options: ChainVerifierOptions;
  readonly #hasher = new RecordHasher();
  readonly #breaks: IntegrityBreak[] = [];
  readonly #queue: CheckedRecord[] = [];
  readonly #recent = new RecentBySeq<Processed>(RECENT_MAX);
  /** Every checkpoint found, in the records and outside them (compact: a year of them is held). */
  readonly #found = new FoundCheckpoints();
  /** The entries found outside the records, by the seq they cover: compared as the records pass it. */
  readonly #external: Uint32Array;
  #externalAt = 0;
  readonly #registered = new Map<string, { publicKey: KeyObject | undefined; fingerprint: string | undefined; seq: number }>();
  /**
   * Per copy an erasure record named (eventId and seq, {@link grantKey}), per field erased: the
   * seq of the latest erasure record naming it. A record at seq r with erased fields is covered
   * for a field when that seq is after r. By copy, not by eventId: every erasure names each copy
   * it erased by its seq (a copy moved by a log cut is named again, at its new seq, by the
   * record rebuilt for it), so a copy no record named — a second copy of one eventId, stored
   * again after retention — blanked by hand is an alteration (review).
   */
  readonly #grants = new Map<string, Map<string, number>>();
  readonly #erasures: Array<{ seq: number; eventId: string; fields: HashedField[] }> = [];
  #rowsWithoutSeq = 0;
  #lastFedSeq = -Infinity;
  #last: Processed | undefined;
  #prevChain: string | undefined;
  #firstSeq: number | undefined;
  #firstChainedSeq: number | undefined;
  #records = 0;
  #legacy = 0;
  #preChainAbsent = 0;
  #pruned = 0;
  #duplicates = 0;
  #erasedFields = 0;
  #finished = false;

  constructor(options: ChainVerifierOptions = {}) {
    // The checkpoints are taken in and not kept as given: the caller's objects can then go.
    const { checkpoints, ...rest } = options;
    this.#options = rest;
    for (const found of checkpoints ?? []) this.#found.add(found.checkpoint, { where: found.where, ...(found.recordSeq === undefined ? {} : { recordSeq: found.recordSeq }), inStream: false });
    const seqs = (i: number) => this.#found.seq(i);
    this.#external = Uint32Array.from({ length: this.#found.size }, (_, i) => i).sort((a, b) => seqs(a) - seqs(b));
  }

  /** Adds the next record (seq ascending). Throws TypeError when the order is broken. */
  add(record: VerifyRecord): void {
    if (this.#finished) throw new TypeError('the verifier has finished');
    this.addChecked(checkRecord(record, this.#hasher));
  }

  /**
   * Adds the next record with its hashes already recomputed ({@link checkRecord}, perhaps on
   * another thread): what {@link add} does after hashing. Throws TypeError when the order is broken.
   */
  addChecked(record: CheckedRecord): void {
    if (this.#finished) throw new TypeError('the verifier has finished');
    if (!Number.isSafeInteger(record.seq) || record.seq < 1) throw new TypeError(`record seq must be a positive integer, got ${record.seq}`);
    if (record.seq < this.#lastFedSeq) throw new TypeError(`records must come in seq order: ${record.seq} after ${this.#lastFedSeq}`);
    this.#lastFedSeq = record.seq;
    this.#queue.push(record);
    // Held back a little: a reordering is recognised by comparing with the records after it.
    if (this.#queue.length > REORDER_WINDOW) this.#process(this.#queue.shift() as CheckedRecord);
  }

  /**
   * One copy of the history (a tier location), read with others, holds the record at `seq`
   * more than once, as identical rows: a break, as when it is read alone (`oneCopy`), though
   * identical copies across the copies read are not.
   */
  duplicatedIn(copy: string, seq: number, eventId: string): void {
    this.#break({ kind: 'duplicated', seq, eventId, message: duplicatedMessage(copy, seq, eventId) });
  }

  /**
   * Records the node lists as committed to the tier `where` that the tier does not hold: the
   * node's copies verified them, but every engine reading the tier misses them.
   */
  missingFromTier(fromSeq: number, toSeq: number, where: string): void {
    const count = toSeq - fromSeq + 1;
    this.#break({
      kind: 'missing',
      seq: fromSeq,
      toSeq,
      message: `missing records: seq ${fromSeq}..${toSeq} (${count} ${count === 1 ? 'record' : 'records'}) are not in the tier at ${where}, which the node lists as committed there (the node still holds ${count === 1 ? 'it' : 'them'}; engines reading the tier do not see ${count === 1 ? 'it' : 'them'})`,
    });
  }

  /**
   * Counts rows a tier holds without a seq: from before the chain existed, they cannot be
   * verified, so the report names how many there are. `seen`, what the tier's files showed of
   * those rows and of its first chained row: rows it shows to have been added since the chain
   * began ({@link rowsWithoutSeqAdded}) are a break.
   */
  addRowsWithoutSeq(count: number, seen?: RowsWithoutSeqSeen): void {
    if (!Number.isSafeInteger(count) || count < 0) throw new TypeError(`rows without a seq must be a non-negative integer, got ${count}`);
    this.#rowsWithoutSeq += count;
    const added = count > 0 && seen !== undefined ? rowsWithoutSeqAdded(count, seen) : undefined;
    if (added !== undefined) this.#break({ kind: 'added', seq: seen?.firstRow?.seq ?? 0, message: added });
  }

  /** Ends the input and returns the report. */
  finish(): VerifyReport {
    if (this.#finished) throw new TypeError('the verifier has finished');
    while (this.#queue.length > 0) this.#process(this.#queue.shift() as CheckedRecord);
    this.#finished = true;
    this.#checkTail();
    const { keyIds, verified, chainId } = this.#checkCheckpoints();
    this.#checkShownKeys();
    this.#checkErasures();
    this.#checkSomethingRead(verified);
    this.#breaks.sort((a, b) => a.seq - b.seq);
    const first = this.#breaks[0];
    const report: VerifyReport = {
      ok: first === undefined,
      records: this.#records,
      firstSeq: this.#firstSeq,
      lastSeq: this.#last?.seq,
      checkpoints: verified,
      erasedFields: this.#erasedFields,
      legacyRecords: this.#legacy,
      prunedRecords: this.#pruned,
      duplicates: this.#duplicates,
      rowsWithoutSeq: this.#rowsWithoutSeq,
      preChainAbsent: this.#preChainAbsent,
      chainId,
      keyIds,
      breaks: this.#breaks,
      message: '',
    };
    report.message = first === undefined ? successMessage(report) : first.message;
    return report;
  }

  #break(entry: IntegrityBreak): void {
    this.#breaks.push(entry);
  }

  #process(record: CheckedRecord): void {
    const digest = record.digest;
    const last = this.#last;
    if (last !== undefined && record.seq === last.seq) {
      this.#duplicate(record, last);
      return;
    }
    this.#firstSeq ??= record.seq;
    this.#bridgeGap(last?.seq, record);
    if (digest === undefined) {
      this.#legacyRecord(record);
      return;
    }
    this.#records++;
    this.#firstChainedSeq ??= record.seq;
    const altered = digest.recordHash !== record.recordHash;
    if (altered) this.#explainAltered(record, digest);
    else if (record.fieldCheck !== digest.fieldCheck) {
      this.#break({ kind: 'altered', seq: record.seq, eventId: record.eventId, fields: ['field_check'], message: `altered record at seq ${record.seq} (eventId ${record.eventId}): its field_check was changed` });
    }
    this.#checkErased(record);
    let stored = record.chainHash;
    // linkedFrom: the link was already found to hold from this very chain hash (where the record was checked).
    if (!altered && this.#prevChain !== undefined && (record.linkedFrom === undefined || record.linkedFrom !== this.#prevChain)) {
      const expected = chainHash(this.#prevChain, digest.recordHash);
      if (stored !== expected) {
        // The next record links to the chain_hash this one should have: only the stored value changed.
        const next = this.#queue[0];
        if (next?.digest !== undefined && next.seq === record.seq + 1 && next.chainHash === chainHash(expected, next.digest.recordHash)) {
          this.#break({ kind: 'altered', seq: record.seq, eventId: record.eventId, fields: ['chain_hash'], message: `altered record at seq ${record.seq} (eventId ${record.eventId}): its chain_hash was changed` });
          stored = expected;
        } else {
          this.#break({
            kind: 'chain',
            seq: record.seq,
            eventId: record.eventId,
            message: `chain broken at seq ${record.seq} (eventId ${record.eventId}): its chain_hash does not follow from seq ${record.seq - 1} (records were replaced, or spliced from another chain)`,
          });
        }
      }
    }
    // Go on from what is stored: one altered record is one break, not a cascade.
    this.#prevChain = stored;
    const processed: Processed = { seq: record.seq, eventId: record.eventId, recordHash: digest.recordHash, storedRecordHash: record.recordHash, storedFieldCheck: record.fieldCheck, chainHash: stored };
    this.#remember(processed);
    this.#last = processed;
    this.#noteIntegrityEvent(record);
    this.#matchExternal(processed);
  }

  /**
   * Adds the checkpoint of the checkpoint record at `recordSeq`: to the entry of a copy found
   * outside the records, when there is one not yet taken by a record, else as an entry of its own.
   */
  #addCheckpointRecord(checkpoint: SignedCheckpoint, recordSeq: number): number {
    const found = this.#found;
    const external = this.#external;
    let low = 0;
    let high = external.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (found.seq(external[mid] as number) < checkpoint.seq) low = mid + 1;
      else high = mid;
    }
    let hash: string | undefined;
    for (let at = low; at < external.length && found.seq(external[at] as number) === checkpoint.seq; at++) {
      const i = external[at] as number;
      hash ??= checkpointHash(checkpoint);
      if (!found.inStream(i) && found.hasHash(i, hash)) {
        found.foundAsRecord(i, recordSeq);
        return i;
      }
    }
    return found.add(checkpoint, { recordSeq, inStream: true });
  }

  /** Compares the checkpoints found outside the records that cover this record's seq with it. */
  #matchExternal(processed: Processed): void {
    const external = this.#external;
    while (this.#externalAt < external.length && this.#found.seq(external[this.#externalAt] as number) < processed.seq) this.#externalAt++;
    for (let at = this.#externalAt; at < external.length && this.#found.seq(external[at] as number) === processed.seq; at++) this.#found.match(external[at] as number, processed.chainHash);
  }

  #duplicate(record: CheckedRecord, last: Processed): void {
    const recordHash = record.digest?.recordHash;
    if (recordHash !== undefined && recordHash === last.recordHash && record.chainHash === last.chainHash) {
      // The values hash the same; what the copy stores of its hashes must be the first's too
      // (checked against the values there), or a reader of this copy alone finds it altered.
      if (record.recordHash !== last.storedRecordHash || record.fieldCheck !== last.storedFieldCheck) {
        const fields = [...(record.recordHash !== last.storedRecordHash ? ['record_hash'] : []), ...(record.fieldCheck !== last.storedFieldCheck ? ['field_check'] : [])];
        this.#break({ kind: 'altered', seq: last.seq, eventId: last.eventId, fields, message: `altered record at seq ${last.seq} (eventId ${last.eventId}): a copy's stored ${fields.join(' and ')} ${fields.length === 1 ? 'differs' : 'differ'} from the record's` });
        return;
      }
      this.#duplicates++;
      // The same hashes do not make the same values: an erased field hashes as its kept hash,
      // whatever the copy holds there. So a copy's erased fields are checked as the first's are.
      this.#checkErased(record, false);
      // Named once: a file copied whole would otherwise add a break per row.
      if (this.#options.oneCopy !== undefined && this.#duplicates === 1) {
        this.#break({ kind: 'duplicated', seq: last.seq, eventId: last.eventId, message: duplicatedMessage(this.#options.oneCopy, last.seq, last.eventId) });
      }
      return;
    }
    this.#break({
      kind: 'conflict',
      seq: last.seq,
      eventId: last.eventId,
      message: `two different records at seq ${last.seq} (eventIds ${last.eventId} and ${record.eventId})`,
    });
  }

  /**
   * Accounts for the seqs between the previous record and this one: declared retention
   * deletions (the chain goes on from the hash kept for the range's end), or missing records.
   * Before the first record, nothing is missing unless the history's start is known.
   */
  #bridgeGap(lastSeq: number | undefined, record: CheckedRecord): void {
    const seq = record.seq;
    let at: number;
    if (lastSeq !== undefined) at = lastSeq + 1;
    else if (this.#options.startSeq !== undefined && this.#options.startSeq < seq) at = this.#options.startSeq;
    else {
      // History that begins after seq 1 may have its start elsewhere (pruned before tiering,
      // or never tiered): nothing is missing, and its first link is checked only when a
      // declared deletion ends right before it.
      const anchor = (this.#options.pruned ?? []).find((range) => range.toSeq === seq - 1);
      if (anchor !== undefined) this.#pruned += anchor.toSeq - anchor.fromSeq + 1;
      this.#prevChain = seq === 1 ? GENESIS_CHAIN_HASH : anchor?.chainHash;
      return;
    }
    if (seq <= at) return;
    let anchored: string | undefined;
    for (const range of [...(this.#options.pruned ?? [])].sort((a, b) => a.fromSeq - b.fromSeq)) {
      if (range.toSeq < at || range.fromSeq >= seq) continue;
      if (range.fromSeq > at) break;
      const end = Math.min(range.toSeq, seq - 1);
      this.#pruned += end - at + 1;
      at = end + 1;
      anchored = range.toSeq === seq - 1 ? range.chainHash : undefined;
      if (at >= seq) break;
    }
    if (at >= seq) {
      this.#prevChain = anchored;
      return;
    }
    const beforeChain = this.#beforeChainStart(record);
    if (beforeChain && this.#options.preChainHoles === true) {
      this.#preChainAbsent += seq - at;
      this.#prevChain = GENESIS_CHAIN_HASH;
      return;
    }
    const hint = beforeChain
      ? ': they come before the record chain began; if this history was upgraded from a version without the chain, whose retention deleted records without declaring them, --pre-chain-holes counts such seqs as not verifiable'
      : '';
    this.#break({
      kind: 'missing',
      seq: at,
      toSeq: seq - 1,
      message: `missing records: seq ${at}..${seq - 1} (${seq - at} ${seq - at === 1 ? 'record' : 'records'})${hint}`,
    });
    this.#prevChain = undefined;
  }

  /**
   * Whether seqs missing right before `record` fall before the chain began: no chained record
   * came yet, and this one predates the chain too or is where it starts (its chain_hash follows
   * from the genesis value). Versions before the chain deleted records by retention without
   * declaring ranges, and tiered rows without a seq, so such seqs prove nothing either way
   * (counted so only with `preChainHoles`). A fully chained history cut at its start is never
   * taken for this: its first record left links to the chain hash before it, not to the genesis
   * value.
   */
  #beforeChainStart(record: CheckedRecord): boolean {
    if (this.#firstChainedSeq !== undefined) return false;
    const digest = record.digest;
    if (digest === undefined) return true;
    return record.chainHash === chainHash(GENESIS_CHAIN_HASH, digest.recordHash);
  }

  #legacyRecord(record: CheckedRecord): void {
    const kind = record.integrity?.kind;
    if (kind === 'checkpoint' || kind === 'registerKey') {
      // Only a leader with the chain on writes these, and every copy keeps the chain fields it
      // gave them: without them, the history was stripped (every row's, and the checkpoint
      // objects deleted, read as a history from before the chain and passed; review).
      this.#break({
        kind: 'altered',
        seq: record.seq,
        eventId: record.eventId,
        fields: ['record_hash', 'chain_hash'],
        message: `altered record at seq ${record.seq} (eventId ${record.eventId}): its chain fields were removed (${record.integrity?.action} records are always chained)`,
      });
    }
    if (this.#firstChainedSeq !== undefined) {
      this.#break({
        kind: 'altered',
        seq: record.seq,
        eventId: record.eventId,
        fields: ['record_hash', 'chain_hash'],
        message: `altered record at seq ${record.seq} (eventId ${record.eventId}): its chain fields were removed`,
      });
    } else this.#legacy++;
    // The chain starts from the genesis value after the records that predate it.
    this.#prevChain = GENESIS_CHAIN_HASH;
    this.#last = { seq: record.seq, eventId: record.eventId, recordHash: '', storedRecordHash: undefined, storedFieldCheck: undefined, chainHash: undefined };
  }

  /** Names what changed in a record whose recomputed hash differs from the stored one. */
  #explainAltered(record: CheckedRecord, recomputed: CheckedDigest): void {
    const moved = this.#reorderedTo(record, recomputed);
    if (moved !== undefined) {
      this.#break({
        kind: 'reordered',
        seq: record.seq,
        eventId: record.eventId,
        toSeq: moved,
        message: `reordered: the record at seq ${record.seq} (eventId ${record.eventId}) was chained at seq ${moved}`,
      });
      return;
    }
    // The stored record_hash alone changed: the values still make the stored chain link.
    if (this.#prevChain !== undefined && record.chainHash === chainHash(this.#prevChain, recomputed.recordHash)) {
      this.#break({ kind: 'altered', seq: record.seq, eventId: record.eventId, fields: ['record_hash'], message: `altered record at seq ${record.seq} (eventId ${record.eventId}): its record_hash was changed` });
      return;
    }
    const fields = changedFields(record.fieldCheck, recomputed.fieldCheck);
    const named = fields.length === 0 ? 'a field (its field check was changed too)' : `field${fields.length > 1 ? 's' : ''} ${fields.join(', ')}`;
    this.#break({ kind: 'altered', seq: record.seq, eventId: record.eventId, fields, message: `altered record at seq ${record.seq} (eventId ${record.eventId}): ${named} changed` });
  }

  /**
   * The seq a record was chained at, when its values hash to the stored record_hash of a nearby
   * seq (or to its own stored hash at a nearby seq): records moved, not altered.
   */
  #reorderedTo(record: CheckedRecord, recomputed: CheckedDigest): number | undefined {
    const content = recomputed.content;
    if (content === undefined) return undefined;
    const stored = new Map<number, string | undefined>();
    for (let seq = record.seq - REORDER_WINDOW; seq < record.seq; seq++) {
      const processed = this.#recent.get(seq);
      if (processed !== undefined) stored.set(seq, processed.storedRecordHash);
    }
    for (const queued of this.#queue) stored.set(queued.seq, queued.recordHash);
    for (let delta = 1; delta <= REORDER_WINDOW; delta++) {
      for (const seq of [record.seq - delta, record.seq + delta]) {
        if (seq < 1) continue;
        const hash = recordHashOf(seq, content.term, content.ingestTs, content);
        if (hash === record.recordHash || hash === stored.get(seq)) return seq;
      }
    }
    return undefined;
  }

  #remember(processed: Processed): void {
    this.#recent.add(processed);
  }

  /** `counted`: the record's erased fields count in the report (not for a copy of one already counted). */
  #checkErased(record: CheckedRecord, counted = true): void {
    const erased = record.erased;
    if (erased === undefined) return;
    const fields: HashedField[] = [];
    for (const { field, holdsMarker } of erased) {
      fields.push(field);
      if (!holdsMarker) {
        this.#break({ kind: 'altered', seq: record.seq, eventId: record.eventId, fields: [field], message: `altered record at seq ${record.seq} (eventId ${record.eventId}): erased field ${field} holds a value` });
      }
    }
    if (counted) this.#erasedFields += fields.length;
    this.#erasures.push({ seq: record.seq, eventId: record.eventId, fields });
  }

  #noteIntegrityEvent(record: CheckedRecord): void {
    const integrity = record.integrity;
    if (integrity === undefined) return;
    const { kind, details: text } = integrity;
    try {
      if (kind === 'checkpoint') {
        const checkpoint = parseSignedCheckpoint(text);
        const entry = this.#addCheckpointRecord(checkpoint, record.seq);
        if (checkpoint.seq >= record.seq) {
          this.#break({ kind: 'checkpoint-mismatch', seq: record.seq, message: `checkpoint at seq ${record.seq} claims to cover seq ${checkpoint.seq}, at or after itself` });
          return;
        }
        const covered = this.#recent.get(checkpoint.seq);
        if (covered !== undefined) this.#found.match(entry, covered.chainHash);
      } else if (kind === 'registerKey') {
        const key = parsePublishedKey(text);
        this.#registered.set(key.keyId, { publicKey: key.publicKey, fingerprint: key.fingerprint, seq: record.seq });
        if (key.fingerprint !== key.keyId) {
          this.#break({ kind: 'replaced-key', seq: record.seq, message: `replaced public key: the key registered at seq ${record.seq} for keyId ${key.keyId} has fingerprint ${key.fingerprint ?? '(not an Ed25519 key)'}` });
        }
      } else {
        const details = parseErasureDetails(text);
        for (const ref of details.records) {
          const key = grantKey(ref.eventId, ref.seq);
          const grant = this.#grants.get(key) ?? new Map<string, number>();
          for (const field of details.fields) grant.set(field, Math.max(grant.get(field) ?? record.seq, record.seq));
          this.#grants.set(key, grant);
        }
      }
    } catch (err) {
      this.#break({ kind: 'altered', seq: record.seq, eventId: record.eventId, fields: ['details'], message: `altered record at seq ${record.seq} (eventId ${record.eventId}): its ${integrity.action} details do not parse (${(err as Error).message})` });
    }
  }

  /**
   * Whether the history was to hold the chained record a checkpoint covers: the seq lies within
   * it, was not declared deleted by retention, and is not past its end (a truncated tail, said
   * by #checkTail). A checkpoint within the history that was never compared with a chained
   * record proves nothing about it: its record's chain fields were removed (so it reads as a
   * record from before the chain), or its checkpoint record was moved far from the record.
   */
  #mustHaveMatched(seq: number): boolean {
    const first = this.#firstSeq;
    const last = this.#last?.seq;
    return first !== undefined && last !== undefined && seq >= first && seq <= last && !this.#isPruned(seq);
  }

  /**
   * Where the history ends: at its last record, or — when ranges the source declared deleted by
   * retention follow that record without a hole — at the end of the last of them (a node whose
   * newest records retention deleted, after they were tiered), with the chain hash kept there.
   * Seqs past that which are neither present nor declared deleted are a truncated tail.
   */
  #historyEnd(): { seq: number; chainHash: string | undefined } {
    let seq = this.#last?.seq ?? 0;
    let chainHash = this.#last?.chainHash;
    for (const range of [...(this.#options.pruned ?? [])].sort((a, b) => a.fromSeq - b.fromSeq)) {
      if (range.fromSeq > seq + 1 || range.toSeq <= seq) continue;
      this.#pruned += range.toSeq - seq;
      seq = range.toSeq;
      chainHash = range.chainHash;
    }
    return { seq, chainHash };
  }

  #checkTail(): void {
    const end = this.#historyEnd();
    const lastSeq = end.seq;
    const found = this.#found;
    // The one covering the most: of equals, a checkpoint record's first, then the first found.
    let furthest: number | undefined;
    for (let i = 0; i < found.size; i++) {
      if (furthest === undefined || found.seq(i) > found.seq(furthest) || (found.seq(i) === found.seq(furthest) && this.#compareMet(i, furthest) < 0)) furthest = i;
    }
    const covered = furthest === undefined ? 0 : found.seq(furthest);
    if (furthest !== undefined && covered > lastSeq) {
      this.#break({
        kind: 'truncated',
        seq: lastSeq + 1,
        toSeq: covered,
        message: `truncated tail: the history ends at seq ${lastSeq}, but the checkpoint in ${found.where(furthest)} covers records up to seq ${covered} (${covered - lastSeq} missing)`,
      });
    }
    // A checkpoint shown outside the records was made by a checkpoint record after the seq it
    // covers: within this history, that record must be there, unless declared deleted by retention.
    // Reported once, where first shown (the same checkpoint may be in a summary and an object).
    const start = this.#firstSeq ?? Infinity;
    const { representative } = this.#distinct();
    const reported = new Set<number>();
    for (let i = 0; i < found.size; i++) {
      if (found.inStream(i)) continue;
      const first = representative[i] as number;
      const seq = found.seq(i);
      // A checkpoint record among its copies is the representative (they are ranked first).
      if (seq < start || found.inStream(first) || reported.has(first) || this.#isPruned(found.recordSeq(i) ?? seq + 1)) continue;
      reported.add(first);
      this.#break({
        kind: 'truncated',
        seq: Math.min(seq + 1, lastSeq + 1),
        message: `records removed: the checkpoint at seq ${seq} (${found.where(i)}) has no checkpoint record in the history after seq ${seq}`,
      });
    }
    const head = this.#options.head;
    if (head !== undefined && head.seq > lastSeq) {
      this.#break({ kind: 'truncated', seq: lastSeq + 1, toSeq: head.seq, message: `truncated tail: the history ends at seq ${lastSeq}, but ${head.where} ends at seq ${head.seq} (${head.seq - lastSeq} missing)` });
    } else if (head !== undefined && head.seq === lastSeq && head.chainHash !== undefined && end.chainHash !== undefined && head.chainHash !== end.chainHash) {
      this.#break({ kind: 'chain', seq: lastSeq, message: `chain broken at seq ${lastSeq}: ${head.where} ends with another chain_hash` });
    }
  }

  /** True when the history holds the chain from its start (so it holds every checkpoint). */
  #fromChainStart(): boolean {
    const first = this.#firstSeq;
    if (first === undefined || (this.#options.pruned ?? []).length > 0) return false;
    return first === 1 || (this.#options.startSeq !== undefined && first <= this.#options.startSeq && this.#legacy > 0);
  }

  #isPruned(seq: number): boolean {
    return (this.#options.pruned ?? []).some((range) => range.fromSeq <= seq && seq <= range.toSeq);
  }

  /**
   * The order the checkpoints were first met in: checkpoint records (in history order, by the
   * seq of the record) before copies found outside the records (in the order given). Of copies
   * of one checkpoint the first in this order stands for them (its place and words). By the
   * record's seq, not the entry: a record that took over its digest object's entry keeps that
   * entry's place among the objects (a differential test against the previous verifier named
   * another record in a truncated tail's words).
   */
  #compareMet(a: number, b: number): number {
    const found = this.#found;
    const aRecord = found.inStream(a);
    if (aRecord !== found.inStream(b)) return aRecord ? -1 : 1;
    return aRecord ? (found.recordSeq(a) as number) - (found.recordSeq(b) as number) || a - b : a - b;
  }

  #distinctMemo: DistinctCheckpoints | undefined;

  /**
   * The distinct checkpoints found: each entry's representative (the first of its copies by
   * {@link #compareMet}), the representatives in seq order (then the seq of their record, then that order),
   * and, by representative, whether any copy was compared with the record it covers and what
   * that record held where one differed (copies hold the same, so any copy's word is theirs). Computed
   * once, after the last record, by sorting entries rather than keying them by hash (a map of a
   * year of hashes would cost more than the entries).
   */
  #distinct(): DistinctCheckpoints {
    if (this.#distinctMemo !== undefined) return this.#distinctMemo;
    const found = this.#found;
    const bySeqAndHash = Uint32Array.from({ length: found.size }, (_, i) => i).sort((a, b) => found.seq(a) - found.seq(b) || found.compareHashes(a, b) || this.#compareMet(a, b));
    const representative = new Uint32Array(found.size);
    const matched = new Uint8Array(found.size);
    const mismatches = new Map<number, { chainHash: string | undefined }>();
    const firsts: number[] = [];
    let first = -1;
    for (let k = 0; k < bySeqAndHash.length; k++) {
      const i = bySeqAndHash[k] as number;
      if (first < 0 || !found.sameAs(first, i)) {
        first = i;
        firsts.push(i);
      }
      representative[i] = first;
      if (found.matched(i)) matched[first] = 1;
      const mismatch = found.mismatch(i);
      if (mismatch !== undefined && !mismatches.has(first)) mismatches.set(first, mismatch);
    }
    const recordSeq = (i: number) => found.recordSeq(i) ?? Infinity;
    const ordered = Uint32Array.from(firsts).sort((a, b) => found.seq(a) - found.seq(b) || recordSeq(a) - recordSeq(b) || this.#compareMet(a, b));
    this.#distinctMemo = { representative, ordered, matched, mismatches };
    return this.#distinctMemo;
  }

  /** Signatures, keys, the checkpoints' own chain, and one chain id. Returns what verified. */
  #checkCheckpoints(): { keyIds: string[]; verified: number; chainId: string | undefined } {
    const pinned = this.#options.pinnedKeys === undefined || this.#options.pinnedKeys.length === 0 ? undefined : new Map(this.#options.pinnedKeys.map((key) => [publicKeyId(key), key]));
    const shown = new Map<string, KeyObject>();
    for (const key of this.#options.shownKeys ?? []) {
      try {
        const read = parsePublishedKey(key.text);
        if (read.publicKey !== undefined && read.fingerprint === read.keyId) shown.set(read.keyId, read.publicKey);
      } catch {
        // Reported by #checkShownKeys.
      }
    }
    const found = this.#found;
    const { ordered, matched, mismatches } = this.#distinct();
    const keyIds = new Set<string>();
    let chainId: string | undefined;
    let verified = 0;
    let previous: { hash: string; seq: number } | undefined;
    for (const entry of ordered) {
      const checkpoint = found.checkpoint(entry);
      const hash = found.hash(entry);
      const where = found.where(entry);
      chainId ??= checkpoint.chainId;
      if (checkpoint.chainId !== chainId) {
        this.#break({ kind: 'foreign-chain', seq: checkpoint.seq, message: `checkpoint at seq ${checkpoint.seq} (${where}) belongs to another chain (chainId ${checkpoint.chainId}; this history's is ${chainId})` });
        continue;
      }
      const registered = this.#registered.get(checkpoint.keyId);
      const key = pinned !== undefined ? pinned.get(checkpoint.keyId) : (registered?.fingerprint === checkpoint.keyId ? registered.publicKey : undefined) ?? shown.get(checkpoint.keyId);
      if (key === undefined) {
        const trusted = pinned !== undefined ? 'not among the --public-key files' : 'neither registered in the chain nor published';
        this.#break({ kind: 'unknown-key', seq: checkpoint.seq, message: `checkpoint at seq ${checkpoint.seq} (${where}) is signed by unknown key ${checkpoint.keyId} (${trusted})` });
        continue;
      }
      if (!checkpointSignatureValid(checkpoint, key)) {
        this.#break({ kind: 'bad-signature', seq: checkpoint.seq, message: `bad signature on the checkpoint at seq ${checkpoint.seq} (${where}, keyId ${checkpoint.keyId}): forged or altered` });
        continue;
      }
      const mismatch = mismatches.get(entry);
      if (matched[entry] !== 1 && this.#mustHaveMatched(checkpoint.seq)) {
        this.#break({
          kind: 'checkpoint-mismatch',
          seq: checkpoint.seq,
          message: `checkpoint at seq ${checkpoint.seq} (${where}) covers no chained record in the history: the record at seq ${checkpoint.seq} has no chain fields, or the checkpoint record was moved away from it`,
        });
      } else if (mismatch !== undefined) {
        this.#break({
          kind: 'checkpoint-mismatch',
          seq: checkpoint.seq,
          message: `checkpoint at seq ${checkpoint.seq} (${where}) does not match the chain: it signs chain_hash ${checkpoint.chainHash.slice(0, 12)}…, the record at seq ${checkpoint.seq} has ${mismatch.chainHash?.slice(0, 12) ?? 'none'}…`,
        });
      }
      if (previous === undefined && checkpoint.previousCheckpointHash !== '' && this.#fromChainStart()) {
        this.#break({
          kind: 'checkpoint-chain',
          seq: checkpoint.seq,
          message: `checkpoint chain broken at seq ${checkpoint.seq} (${where}): the checkpoint it follows is not in the history (a checkpoint was removed)`,
        });
      } else if (previous !== undefined && checkpoint.previousCheckpointHash !== previous.hash) {
        this.#break({
          kind: 'checkpoint-chain',
          seq: checkpoint.seq,
          message: `checkpoint chain broken at seq ${checkpoint.seq} (${where}): it does not follow the checkpoint at seq ${previous.seq} (a checkpoint was removed or forged)`,
        });
      }
      previous = { hash, seq: checkpoint.seq };
      keyIds.add(checkpoint.keyId);
      verified++;
    }
    // Checkpoints found but refused have said why; none found at all must be said too.
    // Records from before the chain count too: with a key pinned, a history of nothing but such
    // records proves nothing either (review: a tier stripped of every chain field read so).
    const unproven = this.#records + this.#legacy;
    if (pinned !== undefined && ordered.length === 0 && unproven > 0) {
      this.#break({
        kind: 'unsigned',
        seq: this.#last?.seq ?? 0,
        message: `no checkpoint signed by a --public-key key covers this history: nothing proves who wrote its ${unproven} ${unproven === 1 ? 'record' : 'records'} (checkpoints removed, or not yet made${this.#legacy > 0 ? `; ${this.#legacy} of them without chain fields` : ''})`,
      });
    }
    return { keyIds: [...keyIds].sort(), verified, chainId };
  }

  /**
   * A history of nothing proves nothing: a mistyped path, or a bucket emptied by whoever holds
   * it, read as "verified 0 records" with exit 0. Records retention removed, records from
   * before the chain or rows without a seq are something read; a history that is empty in truth
   * (no event yet) is not worth a verdict either.
   */
  #checkSomethingRead(checkpoints: number): void {
    if (this.#records > 0 || checkpoints > 0 || this.#pruned > 0 || this.#legacy > 0 || this.#rowsWithoutSeq > 0 || this.#breaks.length > 0) return;
    this.#break({ kind: 'empty', seq: 0, message: 'nothing to verify: no records and no checkpoints were found (a wrong path, table or node, or a history removed whole)' });
  }

  /** A key shown for an id must be the key with that id (fingerprint). */
  #checkShownKeys(): void {
    for (const key of this.#options.shownKeys ?? []) {
      let read;
      try {
        read = parsePublishedKey(key.text);
      } catch (err) {
        this.#break({ kind: 'replaced-key', seq: 0, message: `the public key in ${key.where} is not a published key: ${(err as Error).message}` });
        continue;
      }
      if (read.fingerprint !== read.keyId) {
        this.#break({ kind: 'replaced-key', seq: 0, message: `replaced public key: the key in ${key.where} for keyId ${read.keyId} has fingerprint ${read.fingerprint ?? '(not an Ed25519 key)'}` });
      }
    }
  }

  #checkErasures(): void {
    for (const { seq, eventId, fields } of this.#erasures) {
      const grant = this.#grants.get(grantKey(eventId, seq));
      const unauthorised = fields.filter((field) => (grant?.get(field) ?? -Infinity) <= seq);
      if (unauthorised.length > 0) {
        this.#break({
          kind: 'altered',
          seq,
          eventId,
          fields: unauthorised,
          message: `altered record at seq ${seq} (eventId ${eventId}): field${unauthorised.length > 1 ? 's' : ''} ${unauthorised.join(', ')} erased without an erasure record`,
        });
      }
    }
  }
}

/** The key of one copy in the erasure grants: the seq first (digits, then a newline), so no eventId makes two copies' keys alike. */
function grantKey(eventId: string, seq: number): string {
  return `${seq}\n${eventId}`;
}

/** What a tier's files showed of its rows without a seq and of its first chained row (CheckedBatch.withoutSeq, firstRow). */
export interface RowsWithoutSeqSeen {
  withoutSeq?: { ingestTsMax: number; eventId: string };
  firstRow?: { seq: number; ingestTs: number };
}

/**
 * Why rows without a seq cannot be rows from before the chain, in words; undefined when they
 * may be. Such rows are legitimate only in a tier that existed before the seq column: they were
 * tiered before its first row with a seq (a lower seq was never tiered with one), and ingested
 * before it. A tier whose rows start at seq 1 never lacked the column; a row ingested at or
 * after the first chained row came after the chain. Rows without a seq are not verified, and a
 * search shows them like any other (a copy of an event with another user or decision): added,
 * they are an alteration. (A forger who also dates them back passes as history from before the
 * chain and is still counted apart in the report.)
 */
export function rowsWithoutSeqAdded(count: number, seen: RowsWithoutSeqSeen): string | undefined {
  const first = seen.firstRow;
  const rows = seen.withoutSeq;
  if (first === undefined || rows === undefined) return undefined;
  const what = `${count} tier ${count === 1 ? 'row' : 'rows'} without a seq (eventId ${rows.eventId})`;
  if (first.seq === 1) return `rows added to the tier: ${what}, in a tier whose rows start at seq 1, so none of them predates the seq column`;
  if (!(rows.ingestTsMax < first.ingestTs)) {
    return `rows added to the tier: ${what}, ingested at ${rows.ingestTsMax}, not before the tier's first row with a seq (seq ${first.seq}, ingested at ${first.ingestTs}), so not from before the chain`;
  }
  return undefined;
}

/**
 * The checked fields whose 4-hex checks differ (none when a check is missing or malformed).
 * A salt that could not be used (recomputed parts `xxxx`), or all five salted fields differing
 * and nothing else, is named `salt`: one key feeds all five, while edits of the values would be
 * five edits.
 */
function changedFields(stored: string | undefined, recomputed: string): string[] {
  if (stored === undefined || stored.length !== recomputed.length) return [];
  const a = splitFieldCheck(stored);
  const b = splitFieldCheck(recomputed);
  const changed: string[] = CHECKED_FIELDS.filter((name) => a.get(name) !== b.get(name));
  const salted = changed.filter((name) => saltIndex(name) >= 0);
  const unusable = salted.some((name) => b.get(name) === 'xxxx');
  return unusable || (salted.length === SALTED_FIELDS.length && salted.length === changed.length) ? ['salt'] : changed;
}

function successMessage(report: VerifyReport): string {
  const range = report.firstSeq === undefined ? 'no records' : `seq ${report.firstSeq}..${report.lastSeq}`;
  const message = `verified ${report.records} ${report.records === 1 ? 'record' : 'records'}, ${range}, ${report.checkpoints} ${report.checkpoints === 1 ? 'checkpoint' : 'checkpoints'}`;
  const notes: string[] = [];
  if (report.erasedFields > 0) notes.push(`${report.erasedFields} ${report.erasedFields === 1 ? 'field' : 'fields'} erased`);
  if (report.legacyRecords > 0) notes.push(`${report.legacyRecords} earlier ${report.legacyRecords === 1 ? 'record predates' : 'records predate'} the chain`);
  if (report.prunedRecords > 0) notes.push(`${report.prunedRecords} ${report.prunedRecords === 1 ? 'record' : 'records'} removed by retention`);
  if (report.duplicates > 0) notes.push(`${report.duplicates} identical ${report.duplicates === 1 ? 'copy' : 'copies'} ignored`);
  if (report.preChainAbsent > 0) notes.push(`${report.preChainAbsent} ${report.preChainAbsent === 1 ? 'seq' : 'seqs'} before the chain began not held (deleted or tiered without a seq by a version before it), not verifiable`);
  if (report.rowsWithoutSeq > 0) notes.push(`${report.rowsWithoutSeq} tier ${report.rowsWithoutSeq === 1 ? 'row' : 'rows'} without a seq not verifiable (written before the chain, or added)`);
  return notes.length > 0 ? `${message}; ${notes.join('; ')}` : message;
}

/** The words for a copy of the history that holds a record twice. */
function duplicatedMessage(copy: string, seq: number, eventId: string): string {
  return `duplicated record at seq ${seq} (eventId ${eventId}): ${copy} holds it more than once, so an engine reading it counts the event twice`;
}
