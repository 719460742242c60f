import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { MapContext, Mapped, MappedEvent, RecordFormat } from './formats/record-format.js';
import { isObject } from './formats/record-format.js';
import type { ImportProgress } from './import-progress.js';
import type { IngestClient } from './ingest-client.js';
import type { InputFile } from './input-files.js';
import { JsonFraming, quoteUnsafeIntegers } from './json-framing.js';
import { LINE_CHARS_MAX, readLines, type InvalidUtf8, type Line } from './line-reader.js';
import { RecordIds } from './record-id.js';
import type { ResumeFile } from './resume-file.js';

/** Events per ingest request, and the most JSON one request carries (the node's limit is 8 MiB by default). */
export const BATCH_EVENTS_MAX = 500;
export const BATCH_BYTES_MAX = 2 * 1024 * 1024;

export interface ImportOptions {
  format: RecordFormat;
  files: readonly InputFile[];
  ingest: IngestClient;
  context: MapContext;
  resume?: ResumeFile;
  progress: ImportProgress;
  batchEventsMax?: number;
  batchBytesMax?: number;
  /** The node's retention, when its settings could be read: events older are counted for a warning. */
  retention?: NodeRetention;
  now?: () => number;
}

/** What the node's settings say about how long it keeps events (GET /admin/audit/settings). */
export interface NodeRetention {
  /** `audit.retention.days`. */
  days: number;
  /** `audit.tier.mode`: with a tier, old events are deleted locally only once tiered. */
  tierMode: string;
}

/** Events the node accepted that are older than its retention: how many, and the oldest time. */
export interface PastRetention {
  events: number;
  oldestMs: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

export interface ImportSummary {
  /** Events the node stored now. */
  imported: number;
  /** Events the node already held (an earlier import of the same records). */
  duplicates: number;
  /**
   * Events the node refused because their eventId holds an event with other content there
   * (an eventId conflict: the node kept its event and recorded the refusal).
   */
  conflicts: number;
  /** Records that could not be imported: malformed, or refused by the node (conflicts included). */
  refused: number;
  /** Lines or records that are not audit records (Lakekeeper's other log lines). */
  skipped: number;
}

/** One record of a file, read and mapped: where it is, and what it became. */
interface Piece {
  line: number;
  endLine: number;
  mapped: Mapped;
  /** The text its id is hashed from: the line, or the record as compact JSON. */
  canonical: string;
}

interface Pending {
  event: MappedEvent & { eventId: string };
  line: number;
  endLine: number;
  bytes: number;
}

/**
 * Reads every file, maps each record to an event, and sends them in batches to the ingest
 * endpoint, one batch at a time (so the resume file can say exactly what is done). A record
 * that cannot be read, or that the node refuses, is reported with file:line and the rest go on.
 */
export class Importer {
  readonly #options: ImportOptions;
  readonly #summary: ImportSummary = { imported: 0, duplicates: 0, conflicts: 0, refused: 0, skipped: 0 };
  #bytesRead = 0;
  #records = 0;
  #sent = 0;
  /**
   * Refusals the resume file may count: those of unfinished runs before this one, and this
   * run's whose record ends at or before its file's recorded line (a record after it is read
   * again, and refused again, by the next run).
   */
  #refusalsRecorded = 0;
  /** The end lines of the current file's refused records that no recorded line covers yet. */
  #refusedLines: number[] = [];
  #pastRetention: PastRetention | undefined;

  constructor(options: ImportOptions) {
    this.#options = options;
  }

  /** Accepted events older than the node's retention, so far (also after a failed run). */
  get pastRetention(): PastRetention | undefined {
    return this.#pastRetention === undefined ? undefined : { ...this.#pastRetention };
  }

  async run(): Promise<ImportSummary> {
    const carried = this.#options.resume?.carriedRefusals ?? 0;
    this.#summary.refused += carried;
    this.#refusalsRecorded = carried;
    try {
      for (const file of this.#options.files) await this.#importFile(file);
    } catch (err) {
      // A run that stops (the node refused the token, went away) keeps what it got done.
      await this.#options.resume?.flush();
      throw err;
    }
    await this.#options.resume?.finish();
    this.#options.progress.finish();
    return { ...this.#summary };
  }

  async #importFile(file: InputFile): Promise<void> {
    const { format, resume } = this.#options;
    const resumed = (await resume?.startFor(file)) ?? { skip: false, line: 0 };
    if (resumed.skip) {
      if (file.kind === 'file') this.#bytesRead += file.sizeBytes;
      return;
    }
    if (resumed.note !== undefined) this.#options.progress.note(`auditlake import: ${resumed.note}`);
    const start = resumed.line;
    this.#refusedLines = [];
    const ids = new RecordIds(format.name);
    let batch: Pending[] = [];
    let batchBytes = 0;
    let lastLine = 0;
    // A plain file's last line without a newline may still be being written: left for the next run.
    const unterminated: { line?: number } = {};
    // Input that cannot be read to its end (a truncated gzip file): what came before it is sent.
    const cut: { reason?: string } = {};
    // Lines in the file, to check the resume point against.
    const seen = { lines: 0 };
    const pieces = this.#pieces(file, {
      onUnterminated: (line) => (unterminated.line = line.number),
      onReadError: (reason) => (cut.reason = reason),
      onLine: (line) => (seen.lines = line.number),
    });
    for await (const piece of pieces) {
      lastLine = piece.endLine;
      // Ids depend on every record before, so records already done are read (not sent) again.
      const eventId = piece.mapped.kind === 'event' ? ids.next(piece.canonical) : '';
      if (piece.endLine <= start) continue;
      this.#records++;
      const where = `${file.path}:${piece.line}`;
      if (piece.mapped.kind === 'skipped') {
        this.#summary.skipped++;
      } else if (piece.mapped.kind === 'malformed') {
        this.#refuse(where, piece.mapped.reason, piece.endLine);
      } else {
        // Validity is the node's to judge (one set of rules); what it refuses is reported by line.
        const event = { eventId, ...piece.mapped.event };
        const bytes = JSON.stringify(event).length;
        // Never an empty batch: flushed, it recorded its resume point as line 0 (the first event
        // after a resume point larger than a batch's bytes made every rerun start over; review).
        if (batch.length > 0 && (batch.length >= (this.#options.batchEventsMax ?? BATCH_EVENTS_MAX) || batchBytes + bytes > (this.#options.batchBytesMax ?? BATCH_BYTES_MAX))) {
          // This record, not sent yet, may start on the line the batch ends on (a compact array).
          await this.#flush(file, batch, start, piece.line);
          batch = [];
          batchBytes = 0;
        }
        batch.push({ event, line: piece.line, endLine: piece.endLine, bytes });
        batchBytes += bytes;
      }
      this.#options.progress.update({ bytesRead: this.#bytesRead, records: this.#records, sent: this.#sent, file: file.path });
    }
    if (batch.length > 0) await this.#flush(file, batch, start);
    // A resume point past the file's end is not one an import of this file recorded (an edited
    // resume file, or one of another file under this name): taken as it was, the file was
    // recorded complete with nothing read, silently (review). Nothing of it was sent.
    if (start > seen.lines && cut.reason === undefined && resume !== undefined) {
      throw new AuditError(
        AuditErrorCode.BAD_REQUEST,
        `the resume file ${resume.path} records ${file.path} as done up to line ${start}, but the file has ${seen.lines} line${seen.lines === 1 ? '' : 's'}: that entry is not one an import of this file wrote; remove the entry (or the resume file) to import the file from its first line`,
      );
    }
    // The rest of a file cut short is lost: one failure, so the exit status says the import is not whole.
    if (cut.reason !== undefined) this.#refuse(file.path, cut.reason);
    if (unterminated.line !== undefined) this.#options.progress.note(`auditlake import: last line of ${file.path} (line ${unterminated.line}) has no newline yet: left for the next run`);
    const doneLine = Math.max(lastLine, start);
    await resume?.record(file, doneLine, unterminated.line === undefined && cut.reason === undefined, this.#recordedRefusals(doneLine));
  }

  /** Refusals to record with `line` as the current file's resume point. */
  #recordedRefusals(line: number): number {
    const covered = this.#refusedLines.filter((end) => end <= line).length;
    this.#refusedLines = this.#refusedLines.filter((end) => end > line);
    this.#refusalsRecorded += covered;
    return this.#refusalsRecorded;
  }

  /** The records of a file in order, each mapped, with the lines it spans. */
  async *#pieces(file: InputFile, on: { onUnterminated: (line: Line) => void; onReadError: (reason: string) => void; onLine: (line: Line) => void }): AsyncGenerator<Piece> {
    const { format, context } = this.#options;
    // A plain file's last line without a line break: imported when it ends a record, else left.
    let held: Line | undefined;
    let failed = false;
    const lines = untilReadError(
      readLines(
        file,
        (bytes) => (this.#bytesRead += bytes),
        (line) => {
          on.onLine(line);
          held = line;
        },
      ),
      (reason) => {
        failed = true;
        on.onReadError(reason);
      },
      on.onLine,
    );
    const overlong = (line: Line): Piece => ({ line: line.number, endLine: line.number, mapped: { kind: 'malformed', reason: `the line is longer than ${LINE_CHARS_MAX} characters: not read` }, canonical: '' });
    const notUtf8 = (line: number, endLine: number, reason: string): Piece => ({ line, endLine, mapped: { kind: 'malformed', reason }, canonical: '' });
    if (format.framing === 'lines') {
      const pieceOf = (line: Line): Piece | undefined => {
        if (line.overlong === true) return overlong(line);
        if (line.invalidUtf8 !== undefined) return notUtf8(line.number, line.number, invalidUtf8Reason(file, line.number, line.invalidUtf8));
        if (line.text.trim() === '') return undefined;
        let mapped: Mapped;
        try {
          mapped = format.mapLine(line.text, context);
        } catch (err) {
          mapped = unreadable(err);
        }
        return { line: line.number, endLine: line.number, mapped, canonical: line.text };
      };
      for await (const line of lines) {
        const piece = pieceOf(line);
        if (piece !== undefined) yield piece;
      }
      const last = held;
      if (last === undefined) return;
      // Whole when it ends as a record ends (a Gravitino line, text or JSON, with its closing
      // brace) and reads as one: a prefix of a line its writer is still writing may map too
      // (seven fields of eight), so anything less is left for the next run.
      const piece = last.overlong === true || !last.text.trimEnd().endsWith('}') ? undefined : pieceOf(last);
      if (piece !== undefined && (last.invalidUtf8 !== undefined || piece.mapped.kind !== 'malformed')) yield piece;
      else on.onUnterminated(last);
      return;
    }
    const framing = new JsonFraming();
    const toPiece = (piece: ReturnType<JsonFraming['push']>[number]): Piece => {
      if (piece.kind === 'broken') return { line: piece.line, endLine: piece.line, mapped: { kind: 'malformed', reason: piece.reason }, canonical: '' };
      if (piece.kind === 'text') {
        const mapped: Mapped = format.textLines === 'skip' ? { kind: 'skipped', reason: 'not JSON' } : { kind: 'malformed', reason: `not a JSON record: ${piece.text.slice(0, 60)}` };
        return { line: piece.line, endLine: piece.line, mapped, canonical: '' };
      }
      let record: unknown;
      try {
        record = JSON.parse(quoteUnsafeIntegers(piece.text));
      } catch (err) {
        return { line: piece.line, endLine: piece.endLine, mapped: { kind: 'malformed', reason: `not valid JSON: ${(err as Error).message}` }, canonical: '' };
      }
      if (!isObject(record)) return { line: piece.line, endLine: piece.endLine, mapped: { kind: 'malformed', reason: 'a record must be a JSON object' }, canonical: '' };
      // Hashed as compact JSON, so the same record pretty-printed or on one line gets one id.
      // Mapped and written out inside a try too: a record nested thousands of levels deep parses,
      // then overflows the stack when written, and ended the whole import (review).
      try {
        return { line: piece.line, endLine: piece.endLine, mapped: format.mapRecord(record, context), canonical: JSON.stringify(record) };
      } catch (err) {
        return { line: piece.line, endLine: piece.endLine, mapped: unreadable(err), canonical: '' };
      }
    };
    // Lines with bytes that are not UTF-8 still go through the framing (as text with U+FFFD), so
    // a record spanning one is refused once, as a whole, naming the bad byte.
    const badLines = new Map<number, string>();
    const checked = (piece: ReturnType<JsonFraming['push']>[number]): Piece => {
      if (badLines.size > 0) {
        const endLine = piece.kind === 'record' ? piece.endLine : piece.line;
        let reason: string | undefined;
        for (const [number, why] of badLines) {
          if (number > endLine) break;
          if (number >= piece.line) reason ??= why;
          badLines.delete(number);
        }
        if (reason !== undefined) return notUtf8(piece.line, endLine, reason);
      }
      return toPiece(piece);
    };
    for await (const line of lines) {
      if (line.overlong === true) {
        // A record open across it cannot be whole: it ends here, broken.
        for (const piece of framing.cut(`line ${line.number} of the record is longer than ${LINE_CHARS_MAX} characters`)) yield checked(piece);
        yield overlong(line);
        continue;
      }
      if (line.invalidUtf8 !== undefined) badLines.set(line.number, invalidUtf8Reason(file, line.number, line.invalidUtf8));
      for (const piece of framing.push(line.text, line.number)) yield checked(piece);
      // A bad line outside any record (blank, `[`, `,`) is refused on its own.
      const outside = badLines.get(line.number);
      if (outside !== undefined && !framing.open) {
        badLines.delete(line.number);
        yield notUtf8(line.number, line.number, outside);
      }
    }
    const last = held;
    if (last !== undefined) {
      // Whole when its records close on it: a file written at once without a final newline (a
      // compact array, a pretty-printed record) imported nothing before, silently (review). A
      // record still open, an array not closed or a line ending in a comma may be one its writer
      // is still writing: not cut short, left for the next run.
      const text = last.text.trim();
      const closes = last.overlong !== true && (text.endsWith('}') || text.endsWith(']')) && (!text.startsWith('[') || text.endsWith(']'));
      const pieces = closes ? framing.push(last.text, last.number) : [];
      if (pieces.length === 0 || framing.open) {
        on.onUnterminated(last);
        return;
      }
      if (last.invalidUtf8 !== undefined) badLines.set(last.number, invalidUtf8Reason(file, last.number, last.invalidUtf8));
      for (const piece of pieces) yield checked(piece);
    }
    // A record open where the input could not be read further is lost with the rest of the file.
    if (failed) return;
    for (const piece of framing.end()) yield checked(piece);
  }

  /**
   * Sends one batch; what the node refuses is reported and the rest sent again. The resume point
   * is a line: with `nextLine`, the line where the next record not yet sent starts, it stays
   * before that line, or a run resumed from it would skip that line's records not sent (many
   * records share one line in a compact JSON array: a resumed import lost all but the first
   * batch's; review). The records of that line sent already are sent again then: duplicates.
   */
  /** Sends `batch` and records the file's resume point after it: never below `start`, where this run resumed. */
  async #flush(file: InputFile, batch: Pending[], start: number, nextLine?: number): Promise<void> {
    await this.#send(file, batch);
    this.#sent += batch.length;
    let line = 0;
    for (const p of batch) line = Math.max(line, p.endLine);
    if (nextLine !== undefined) line = Math.min(line, nextLine - 1);
    line = Math.max(line, start);
    await this.#options.resume?.record(file, line, false, this.#recordedRefusals(line));
  }

  async #send(file: InputFile, batch: Pending[]): Promise<void> {
    let remaining = batch;
    while (remaining.length > 0) {
      const answer = await this.#options.ingest.send(remaining.map((p) => p.event));
      if (answer.kind === 'stored') {
        this.#summary.imported += answer.ingested - answer.duplicates - answer.conflicts;
        this.#summary.duplicates += answer.duplicates;
        this.#summary.conflicts += answer.conflicts;
        this.#refuseConflicts(file, remaining, answer.conflicts, answer.conflictEventIds);
        this.#notePastRetention(remaining);
        return;
      }
      if (answer.kind === 'too-large') {
        if (remaining.length === 1) {
          this.#refuse(`${file.path}:${remaining[0]!.line}`, 'the event is larger than the node accepts in one request', remaining[0]!.endLine);
          return;
        }
        const half = Math.ceil(remaining.length / 2);
        await this.#send(file, remaining.slice(0, half));
        remaining = remaining.slice(half);
        continue;
      }
      const refused = remaining[answer.index]!;
      this.#refuse(`${file.path}:${refused.line}`, `refused by the node: ${answer.message}`, refused.endLine);
      remaining = remaining.filter((p) => p !== refused);
    }
  }

  /**
   * Records the node refused as eventId conflicts are records not imported: refused like the
   * rest (exit status 3), each by its line when the answer names its id (it names the first
   * 100). Counted as imported-but-conflicting only, the summary said `refused 0` and the exit
   * status 0 while standard error said they were refused (review).
   */
  #refuseConflicts(file: InputFile, sent: readonly Pending[], conflicts: number, ids: readonly string[]): void {
    if (conflicts === 0) return;
    const byId = new Map(sent.map((p) => [p.event.eventId, p]));
    let named = 0;
    for (const id of ids) {
      const pending = byId.get(id);
      if (pending === undefined) continue;
      named++;
      this.#refuse(`${file.path}:${pending.line}`, `refused by the node as an eventId conflict: eventId ${id} holds an event with other content there (the node kept that one)`, pending.endLine);
    }
    const lastLine = Math.max(...sent.map((p) => p.endLine));
    for (let i = named; i < conflicts; i++) this.#refuse(file.path, `a record of lines ${sent[0]!.line}-${lastLine} was refused by the node as an eventId conflict (the node names only the first 100 of a batch)`, lastLine);
  }

  /** Counts the accepted events the node's retention will prune (duplicates too: they are as old). */
  #notePastRetention(accepted: readonly Pending[]): void {
    const retention = this.#options.retention;
    if (retention === undefined) return;
    const cutoffMs = (this.#options.now ?? Date.now)() - retention.days * DAY_MS;
    for (const { event } of accepted) {
      if (event.ts >= cutoffMs) continue;
      const past = (this.#pastRetention ??= { events: 0, oldestMs: event.ts });
      past.events++;
      past.oldestMs = Math.min(past.oldestMs, event.ts);
    }
  }

  /** `endLine`: where the refused record ends; none for a file cut short, which each run meets again. */
  #refuse(where: string, reason: string, endLine?: number): void {
    this.#summary.refused++;
    if (endLine !== undefined) this.#refusedLines.push(endLine);
    this.#options.progress.note(`${where}: ${reason}`);
  }
}

/** Why a line with bytes that are not UTF-8 is refused: where the first one is, and what to do. */
function invalidUtf8Reason(file: InputFile, line: number, at: InvalidUtf8): string {
  const input = file.kind === 'stdin' ? 'standard input' : at.gunzipped === true ? 'the file once gunzipped' : 'the file';
  return `not valid UTF-8: byte ${at.lineByte} of line ${line} (byte offset ${at.inputByte} of ${input}) is not part of a UTF-8 character; nothing is replaced, so the record is not imported: convert the file to UTF-8 first (iconv -f ISO-8859-1 -t UTF-8 for Latin-1)`;
}

/** A record the format could not map or write out (a record nested too deep for the stack): refused, naming why. */
function unreadable(err: unknown): Mapped {
  return { kind: 'malformed', reason: `cannot be read as a record: ${(err as Error).message}` };
}

/**
 * The lines of `lines` until reading fails (a gzip file that ends early, a read error): then
 * `onError` hears why, naming the last line read, and the lines end. `onLine` hears each line. Errors of the consumer
 * are not caught here.
 */
async function* untilReadError(lines: AsyncGenerator<Line>, onError: (reason: string) => void, onLine: (line: Line) => void): AsyncGenerator<Line> {
  let last = 0;
  try {
    for (;;) {
      let next: IteratorResult<Line>;
      try {
        next = await lines.next();
      } catch (err) {
        const error = err as NodeJS.ErrnoException;
        const gzipCut = error.code === 'Z_BUF_ERROR' || error.message === 'unexpected end of file';
        onError(gzipCut ? `gzip ends early after line ${last}` : `reading stopped after line ${last}: ${error.message}`);
        return;
      }
      if (next.done === true) return;
      last = next.value.number;
      onLine(next.value);
      yield next.value;
    }
  } finally {
    // A consumer that stops early (the node failed) closes the file.
    await lines.return(undefined);
  }
}
