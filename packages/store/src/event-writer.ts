import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { AuditError, AuditErrorCode, storedEventJson, type EncodedEvent } from '@auditlake/model';
import type { Level } from 'level';
import { PREFIX, idKey, localKey, metaKey, encodeUint } from './event-keys.js';
import { LogTail } from './log-tail.js';
import { termsFromJson, type IndexWriter } from './index-writer.js';
import type { TextSketchWriter } from './text-sketch-writer.js';
import { termRunKey, termRunValue, type TermRun, type TermRuns } from './term-runs.js';
import { parseErasureDetails } from '@auditlake/integrity';
import { erasureEntryOf } from './integrity-index.js';
import type { IntegrityEntry, RecordChain } from './record-chain.js';
import type { DayLedger } from './day-ledger.js';
import type { SourceLedger } from './source-ledger.js';
import type { IngestClock } from './ingest-clock.js';

type Db = Level<string, string>;

/** A replicated-metadata value to write atomically with the events of one append. */
export interface MetaPut {
  name: string;
  value: unknown;
}

export interface AppendOptions {
  /**
   * Ids this node generated moments ago, which cannot already be stored: their idempotency
   * lookup is skipped. Every other id is looked up, because a client or a forwarding follower
   * may be re-sending it.
   */
  freshIds?: ReadonlySet<string>;
  /**
   * Asked at the append's turn in the writer: false once `freshIds` may have been stored
   * meanwhile by another way (a forward that waited while its sender's re-send reached another
   * leader, whose entries this node then took in), so they are looked up like any id.
   */
  freshIdsTrusted?: () => boolean;
  /** Metadata written in the same LevelDB batch as the events (e.g. the settings they record). */
  meta?: readonly MetaPut[];
  /**
   * Who the append is for (a principal, a forwarding node): passed to the tier lookup it may
   * make for possible re-sends, whose turns are shared out by sender (ResendLookupGate).
   */
  lookupSender?: string;
  /**
   * Who may order these events, asked right before their batch is written: the cluster's
   * leader passes its own. Default: the store's sequencer (AuditStoreOptions.sequencer).
   */
  sequencer?: Sequencer;
  /**
   * Asked in the writer's queue with the events the log does not hold now (those to be stored as
   * new; fresh ids left out): false when what the caller decided before queueing them may no
   * longer hold for one of them (it was in the log then and may have been deleted since).
   * Nothing of the append is written then; it resolves `stale`. `erasing`: the eventIds (with
   * the fields) named by erasure records composed earlier in the same write, not yet recorded
   * anywhere else.
   */
  unchanged?: (absent: readonly EncodedEvent[], erasing: ReadonlyMap<string, readonly string[]>) => boolean;
}

/** Where an appended event was stored. */
export interface StoredRef {
  eventId: string;
  seq: number;
  ingestTs: number;
  term: number;
}

export interface AppendResult {
  /** Newly stored events, in the order they were given, with their seq and ingestTs. */
  stored: StoredRef[];
  /**
   * Events whose eventId was already stored (or repeated within the append) with the same
   * content (the same content hash, docs/integrity.md): a retry, kept once.
   */
  duplicates: number;
  /**
   * Events whose eventId was already stored (or taken earlier in the append) with other
   * content: refused, and the event stored first under the id is kept (the log is append-only).
   * In the order they were given.
   */
  conflicts: EventIdConflict[];
  /**
   * EventIds of events judged against a copy the tier holds (re-sent after retention deleted
   * the log's copy: resent-after-retention.ts), among the duplicates and conflicts; absent when
   * none. The log does not hold them, so nothing it replicates confirms them: the tier does.
   */
  heldByTier?: string[];
}

/** An event refused because another event with other content holds its eventId. */
export interface EventIdConflict {
  eventId: string;
  /** The content hash of the event stored under the id (the one kept); erased fields count by their kept hashes. */
  storedHash: string;
  /** The content hash of the refused event. */
  refusedHash: string;
}

/**
 * What the writer answers per append: every event it did not store because its id was taken,
 * still to be told apart (a retry or a conflict) once the batch is written, off the writer.
 */
export interface WrittenAppend {
  stored: StoredRef[];
  /** Events whose id was already stored or taken earlier in the group; undefined when none. */
  repeated: EncodedEvent[] | undefined;
  /** AppendOptions.unchanged said no: nothing was written. */
  stale?: true;
  /** Its group's write applied an erasure (rewrote stored events). */
  rewrote?: true;
}

/** Where the log ends: the last seq, its term, and the highest ingestTs assigned so far. */
export interface WriterPosition {
  lastSeq: number;
  lastTerm: number;
  lastIngestTs: number;
}

/** What an exclusive operation may touch while no append runs. */
export interface ExclusiveContext {
  db: Db;
  position: WriterPosition;
  setPosition: (position: WriterPosition) => void;
  /** The log's term runs: change them only after the batch that stores the change is written. */
  runs: TermRuns;
}

/**
 * Where the log ends and the highest ingestTs so far, written with every change to the log:
 * the last entry may be deleted by retention or cut by a truncation, and neither the next seq
 * nor ingestTs may go back after a restart.
 */
export const LOG_END_KEY = localKey('logEnd');

export function logEndValue(position: WriterPosition): string {
  return JSON.stringify({ seq: position.lastSeq, ingestTs: position.lastIngestTs });
}

/**
 * Events composed between two yields to the event loop while a group is prepared. A group of
 * 20,000 chained events takes over a second of CPU to compose; without yields every other
 * request of the node (a settings read, a health probe, a search) waited for all of it. At
 * ~50–70 µs per event (more on a loaded machine), 250 events hold the loop for about 15 ms: a
 * request needs several turns of the loop to be answered, and at 1,000 events a turn (60 ms or
 * more) put a soak's settings reads past 100 ms at p99. A yield costs microseconds.
 */
export const WRITER_YIELD_EVENTS = 250;

type PendingOp =
  | { kind: 'append'; events: readonly EncodedEvent[]; options: AppendOptions; resolve: (r: WrittenAppend) => void; reject: (err: unknown) => void }
  | { kind: 'exclusive'; run: (ctx: ExclusiveContext) => Promise<unknown>; resolve: (r: unknown) => void; reject: (err: unknown) => void };

type PendingAppend = Extract<PendingOp, { kind: 'append' }>;

/** Returns the term to stamp on new events; throws AUDIT_NOT_LEADER when this node may not order events. */
export type Sequencer = () => number;

/**
 * Local-metadata key of the chain head `{seq, hash}`, written with every change to the log
 * while the chain is kept: the last entry may later be deleted by retention, and the next one
 * must still chain to it.
 */
export const CHAIN_HEAD_KEY = localKey('chainHead');

/**
 * Adds what integrity records mean for the store to a batch about to be written: `rewrote` when
 * earlier entries were rewritten; `commit` makes the change seen in memory, called once the batch
 * is written (never for a batch that failed).
 */
export type IntegrityIndexer = (batch: PutSink & { del(key: string): unknown }, entries: readonly IntegrityEntry[], newTables: Set<string>) => Promise<{ rewrote: boolean; commit(): void }>;

/** Anything that takes puts: a chained LevelDB batch. */
export interface PutSink {
  put(key: string, value: string): unknown;
  put(key: string, value: Uint8Array, options: { valueEncoding: 'view' }): unknown;
}

/**
 * Adds the puts that store one event under its three keys; `json` is the stored event's JSON,
 * made once by whoever has it: composed at append, or the leader's bytes as received.
 */
export function putEvent(batch: PutSink, eventId: string, timestamp: number, seqNumber: number, json: string | Uint8Array): void {
  const ts = encodeUint(timestamp);
  const seq = encodeUint(seqNumber);
  if (typeof json === 'string') batch.put(PREFIX.time + ts + seq, json);
  else batch.put(PREFIX.time + ts + seq, json, VIEW);
  batch.put(PREFIX.seq + seq, ts);
  batch.put(idKey(eventId), ts + seq);
}

const VIEW = { valueEncoding: 'view' } as const;

/**
 * The single writer of the log: appends queue here and are written in groups, one synced
 * LevelDB batch per group (group commit). One writer means seq and ingestTs are assigned in
 * exactly the order events become durable, and concurrent requests share one fsync.
 * Replication applies and truncations run as exclusive operations in the same queue, so they
 * never interleave with an append.
 */
export class EventWriter {
  readonly #db: Db;
  readonly #clock: IngestClock;
  readonly #groupEventsMax: number;
  readonly #sequencer: Sequencer;
  readonly #tail: LogTail;
  readonly #index: IndexWriter;
  readonly #text: TextSketchWriter;
  readonly #runs: TermRuns;
  readonly #chain: RecordChain;
  readonly #indexIntegrity: IntegrityIndexer;
  readonly #ledger: SourceLedger;
  readonly #days: DayLedger;
  #position: WriterPosition;
  #queue: PendingOp[] = [];
  #draining: Promise<void> | undefined;

  constructor(
    db: Db,
    position: WriterPosition,
    options: {
      clock: IngestClock;
      groupEventsMax: number;
      sequencer: Sequencer;
      tail: LogTail;
      index: IndexWriter;
      text: TextSketchWriter;
      runs: TermRuns;
      chain: RecordChain;
      indexIntegrity: IntegrityIndexer;
      ledger: SourceLedger;
      days: DayLedger;
    },
  ) {
    this.#db = db;
    this.#ledger = options.ledger;
    this.#days = options.days;
    this.#chain = options.chain;
    this.#indexIntegrity = options.indexIntegrity;
    this.#tail = options.tail;
    this.#index = options.index;
    this.#text = options.text;
    this.#runs = options.runs;
    this.#position = { ...position };
    this.#clock = options.clock;
    this.#groupEventsMax = options.groupEventsMax;
    this.#sequencer = options.sequencer;
  }

  get position(): WriterPosition {
    return { ...this.#position };
  }

  /** Resolves once the events are on disk (`sync: true`): acknowledged means durable. */
  append(events: readonly EncodedEvent[], options: AppendOptions = {}): Promise<WrittenAppend> {
    return new Promise((resolve, reject) => this.#enqueue({ kind: 'append', events, options, resolve, reject }));
  }

  /** Runs `run` alone, after every queued operation and before any later one. */
  exclusive<T>(run: (ctx: ExclusiveContext) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => this.#enqueue({ kind: 'exclusive', run, resolve: resolve as (r: unknown) => void, reject }));
  }

  /** Waits for every queued operation to settle. */
  async flush(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  #enqueue(op: PendingOp): void {
    this.#queue.push(op);
    this.#draining ??= this.#drain();
  }

  async #drain(): Promise<void> {
    // Let #enqueue store the promise before this can finish, so the clearing below always wins.
    await Promise.resolve();
    for (;;) {
      const next = this.#queue[0];
      if (next === undefined) {
        // Cleared in the same synchronous step that saw the queue empty: an operation arriving
        // after this starts a new drain, and none can slip in between and be stranded.
        this.#draining = undefined;
        return;
      }
      if (next.kind === 'exclusive') {
        this.#queue.shift();
        await this.#runExclusive(next);
        continue;
      }
      const group = this.#takeAppendGroup();
      try {
        const results = await this.#write(group);
        group.forEach((pending, i) => pending.resolve(results[i] as WrittenAppend));
      } catch (err) {
        const error =
          err instanceof AuditError
            ? err
            : new AuditError(AuditErrorCode.STORE_WRITE_FAILED, `could not write audit events to the local store (nothing of them was stored; safe to retry with the same eventIds): ${String(err)}`, { cause: err, retryable: true });
        for (const pending of group) pending.reject(error);
      }
    }
  }

  async #runExclusive(op: Extract<PendingOp, { kind: 'exclusive' }>): Promise<void> {
    try {
      op.resolve(
        await op.run({
          db: this.#db,
          position: { ...this.#position },
          setPosition: (position) => {
            this.#position = { ...position };
          },
          runs: this.#runs,
        }),
      );
    } catch (err) {
      op.reject(err);
    }
  }

  /** Queued appends that share one batch: up to groupEventsMax events, all under one sequencer. */
  #takeAppendGroup(): PendingAppend[] {
    const group: PendingAppend[] = [];
    let events = 0;
    for (;;) {
      const next = this.#queue[0];
      if (next === undefined || next.kind !== 'append') break;
      if (group.length > 0 && events + next.events.length > this.#groupEventsMax) break;
      if (group.length > 0 && this.#sequencerOf(next) !== this.#sequencerOf(group[0] as PendingAppend)) break;
      group.push(next);
      events += next.events.length;
      this.#queue.shift();
    }
    return group;
  }

  #sequencerOf(pending: PendingAppend): Sequencer {
    return pending.options.sequencer ?? this.#sequencer;
  }

  async #write(group: PendingAppend[]): Promise<WrittenAppend[]> {
    const lookupIds: string[] = [];
    // Asked once per append, here at its turn: both uses below see the same answer.
    const freshOf = new Map(group.map((pending) => [pending, trustedFreshIds(pending.options)] as const));
    for (const pending of group) {
      const fresh = freshOf.get(pending);
      for (const event of pending.events) {
        if (!fresh?.has(event.eventId)) lookupIds.push(event.eventId);
      }
    }
    const found = lookupIds.length === 0 ? [] : await this.#db.getMany(lookupIds.map(idKey));
    const alreadyStored = new Set<string>();
    found.forEach((value, i) => {
      if (value !== undefined) alreadyStored.add(lookupIds[i] as string);
    });

    const eventsMax = group.reduce((n, pending) => n + pending.events.length, 0);
    await this.#text.prepare(this.#position.lastSeq + 1, this.#position.lastSeq + Math.max(1, eventsMax));
    const sequencer = this.#sequencerOf(group[0] as PendingAppend);
    // Asked before the events are stamped, and again right before the batch (below).
    const term = sequencer();
    let seq = this.#position.lastSeq;
    // ingestTs never goes backwards, even if the wall clock does (invariant 3), and goes on at
    // real speed while the wall clock is behind the log (IngestClock).
    const ingestTs = this.#clock.stamp(this.#position.lastIngestTs);
    const seenInGroup = new Set<string>();
    // The chained form: the array form with an options object clones every operation, which
    // measured as the largest single cost of ingest (BENCHMARKS.md).
    const batch = this.#db.batch();
    const results: WrittenAppend[] = [];
    const written: string[] = [];
    // Asked once per group: the tail may be switched on or off (setLogTailBytes) while it is written.
    const keepTail = this.#tail.enabled;
    const newTables = new Set<string>();
    const chain = this.#chain;
    // The chain moves on in memory only once the batch is written (see below).
    let chainHash = chain.head.hash;
    const integrity: IntegrityEntry[] = [];
    const ledger = this.#ledger.begin();
    const days = this.#days.begin();
    let rewrote = false;
    let commitIntegrity: (() => void) | undefined;
    // Ids named by erasures composed so far in this group: an append after one in the same group
    // is asked about them (AppendOptions.unchanged) before they are recorded anywhere.
    const erasing = new Map<string, readonly string[]>();
    try {
      let sinceYield = 0;
      for (const pending of group) {
        const unchanged = pending.options.unchanged;
        if (unchanged !== undefined && !unchanged(pending.events.filter((event) => !alreadyStored.has(event.eventId) && freshOf.get(pending)?.has(event.eventId) !== true), erasing)) {
          results.push({ stored: [], repeated: undefined, stale: true });
          continue;
        }
        const result: WrittenAppend = { stored: [], repeated: undefined };
        for (const event of pending.events) {
          // Nothing else can write meanwhile (this is the only writer, and exclusive operations
          // wait in its queue); reads and other requests get their turn.
          if (++sinceYield === WRITER_YIELD_EVENTS) {
            sinceYield = 0;
            await yieldToEventLoop();
          }
          if (alreadyStored.has(event.eventId) || seenInGroup.has(event.eventId)) {
            // Told apart from a conflict after the write (AuditStore.appendEncoded), not here:
            // the writer holds every other append while it works.
            (result.repeated ??= []).push(event);
            continue;
          }
          seenInGroup.add(event.eventId);
          seq++;
          // Composed from the JSON made at validation: the event is serialised once.
          let json: string;
          if (chain.enabled) {
            const chained = chain.append(event, ingestTs, seq, term, chainHash);
            json = chained.json;
            chainHash = chained.chainHash;
            if (chained.integrity) {
              integrity.push(chained.integrity);
              if (chained.integrity.kind === 'erase') noteErasing(erasing, chained.integrity);
            }
          } else {
            json = storedEventJson(event, ingestTs, seq, term);
            // Without the chain an erasure record is still applied (one forwarded from a node
            // with the chain; a node without it refuses new erasures): no copy keeps the values.
            const erasure = erasureEntryOf(event.json, seq);
            if (erasure) {
              integrity.push(erasure);
              noteErasing(erasing, erasure);
            }
          }
          putEvent(batch, event.eventId, event.timestamp, seq, json);
          ledger.addJson(event.json, ingestTs);
          days.countJson(event.json, event.timestamp, 'received');
          // In the same batch as the event: the indexes and the log can never disagree.
          this.#index.put(batch, termsFromJson(event.json), event.timestamp, seq, newTables);
          // The event's own JSON: q matches its fields, never its place in the log or its chain
          // hashes (whose hex trigrams would only cost time and fill the sketch).
          this.#text.add(seq, event.timestamp, event.json);
          if (keepTail) written.push(json);
          result.stored.push({ eventId: event.eventId, seq, ingestTs, term });
        }
        for (const meta of pending.options.meta ?? []) {
          batch.put(metaKey(meta.name), JSON.stringify(meta.value));
        }
        results.push(result);
      }
      this.#text.putChanged(batch);
      if (seq > this.#position.lastSeq && integrity.length > 0) {
        const indexed = await this.#indexIntegrity(batch, integrity, newTables);
        rewrote = indexed.rewrote;
        commitIntegrity = () => indexed.commit();
      }
      // Reads the day rows the group adds to: before the term is asked again, so no wait follows it.
      await days.prepare();
      // The group took its time and yielded: a node that lost its lease meanwhile, or won a
      // later term, must not write events stamped with the term it had when it began.
      const termNow = sequencer();
      if (termNow !== term) {
        throw new AuditError(AuditErrorCode.NOT_LEADER, `the term changed from ${term} to ${termNow} while these events were being ordered: nothing of them was stored; safe to retry with the same eventIds`, { retryable: true });
      }
    } catch (err) {
      this.#index.forget(newTables);
      await batch.close();
      throw err;
    }
    // The first entry of a term this node orders starts a run (term-runs.ts).
    let run: TermRun | undefined;
    const grew = seq > this.#position.lastSeq;
    if (grew) {
      const current = this.#runs.runAt(this.#position.lastSeq);
      if (current === undefined || current.term !== term || current.received) {
        run = { firstSeq: this.#position.lastSeq + 1, term, received: false };
        batch.put(termRunKey(run.firstSeq), termRunValue(run));
      }
      batch.put(LOG_END_KEY, logEndValue({ lastSeq: seq, lastTerm: term, lastIngestTs: ingestTs }));
    }
    ledger.putChanged(batch);
    days.putChanged(batch);
    if (grew && chain.enabled) batch.put(CHAIN_HEAD_KEY, JSON.stringify({ seq, hash: chainHash }));
    if (batch.length > 0) {
      const group = keepTail && !rewrote ? LogTail.encode(written) : undefined;
      written.length = 0;
      // Store before ack: a caller that got 200 may never retry.
      try {
        await batch.write({ sync: true });
      } catch (err) {
        this.#index.forget(newTables);
        throw err;
      }
      ledger.commit();
      days.commit();
      commitIntegrity?.();
      // An erasure rewrote entries the tail may hold: it no longer holds what LevelDB does.
      if (rewrote) this.#tail.clear();
      if (group) this.#tail.append(this.#position.lastSeq + 1, group);
    } else {
      await batch.close();
    }
    if (run) this.#runs.add(run);
    if (grew) {
      this.#position = { lastSeq: seq, lastTerm: term, lastIngestTs: ingestTs };
      if (chain.enabled) chain.commit({ hash: chainHash, started: true });
    }
    if (rewrote) for (const result of results) result.rewrote = true;
    return results;
  }
}

/** Adds the eventIds an erasure record names (earlier records only), with its fields. */
function noteErasing(erasing: Map<string, readonly string[]>, entry: IntegrityEntry): void {
  let details;
  try {
    details = parseErasureDetails(entry.details);
  } catch {
    return; // Not erasure details: it erases nothing.
  }
  for (const ref of details.records) if (ref.seq < entry.seq) erasing.set(ref.eventId, [...new Set([...(erasing.get(ref.eventId) ?? []), ...details.fields])]);
}

/** The ids an append may store without looking them up: its fresh ids while they are trusted (AppendOptions.freshIdsTrusted). */
export function trustedFreshIds(options: Pick<AppendOptions, 'freshIds' | 'freshIdsTrusted'>): ReadonlySet<string> | undefined {
  return options.freshIds !== undefined && options.freshIdsTrusted?.() !== false ? options.freshIds : undefined;
}
