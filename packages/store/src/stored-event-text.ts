import { storedTail, storedToOutputJson, type Decision, type StoredEvent, type StoredTail } from '@auditlake/model';
import { jsonStringKey, stringFieldOfJson } from './json-field.js';

const EVENT_ID_START = '{"eventId":"';
/** `{"eventId":"` less its brace: what stringFieldOfJson looks for, found at index 0 + 1. */
const EVENT_ID_KEY = { text: EVENT_ID_START.slice(1), bytes: Buffer.from(EVENT_ID_START.slice(1)) };
const USER_ID_KEY = jsonStringKey('userId');
const TIMESTAMP_MEMBER = ',"timestamp":';
const INGEST_TS_MEMBER = ',"ingestTs":';
const SEQ_MEMBER = ',"seq":';

/** The non-negative integer written at `from` up to exactly `end`, or undefined. */
function integerBetween(text: string, from: number, end: number): number | undefined {
  if (end <= from || end - from > 16) return undefined;
  let n = 0;
  for (let i = from; i < end; i++) {
    const c = text.charCodeAt(i) - 0x30;
    if (c < 0 || c > 9) return undefined;
    n = n * 10 + c;
  }
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * A stored event read for a page of search results, parsed only as far as a page needs. The
 * fields that place it in the newest-first order (eventId, timestamp, ingestTs, seq) and userId
 * (the most used filter) are read from the text when it is made; every other field parses the
 * whole text on first use. A page answered as JSON is cut from the text (storedJsonOf), so a
 * one-day page never parses its events: that was about a tenth of the request's CPU.
 *
 * The other fields are getters on the prototype: code that reads an event field by field
 * (toAuditEvent, toEventOutput, the filter) sees them all, an absent optional field reads as
 * undefined, and JSON.stringify gives the stored event; spreading one or listing its keys does
 * not, so these objects stay inside the search path (searchBatches with `textEvents`).
 */
export class StoredEventText {
  readonly eventId: string;
  readonly userId: string;
  readonly timestamp: number;
  readonly ingestTs: number;
  readonly seq: number;
  /** The text the store holds. */
  readonly json: string;
  /** Where the members after the event's fields are: found once, used again to cut the API's JSON. */
  readonly #tail: StoredTail;
  #parsed: StoredEvent | undefined;

  private constructor(json: string, tail: StoredTail, eventId: string, userId: string, timestamp: number, ingestTs: number, seq: number) {
    this.json = json;
    this.#tail = tail;
    this.eventId = eventId;
    this.userId = userId;
    this.timestamp = timestamp;
    this.ingestTs = ingestTs;
    this.seq = seq;
  }

  /**
   * The event of a stored text, or undefined when the text is not laid out as the store writes
   * it (eventId first; ending with timestamp, ingestTs, seq, term and the optional record chain
   * members, see storedTail): the caller then parses it whole.
   */
  static of(json: string): StoredEventText | undefined {
    if (!json.startsWith(EVENT_ID_START)) return undefined;
    const tail = storedTail(json);
    if (tail === undefined || tail.timestampAt < 0) return undefined;
    const timestamp = integerBetween(json, tail.timestampAt + TIMESTAMP_MEMBER.length, tail.ingestTsAt);
    const ingestTs = integerBetween(json, tail.ingestTsAt + INGEST_TS_MEMBER.length, tail.seqAt);
    const seq = integerBetween(json, tail.seqAt + SEQ_MEMBER.length, tail.termAt);
    const eventId = stringFieldOfJson(json, EVENT_ID_KEY);
    const userId = stringFieldOfJson(json, USER_ID_KEY);
    if (eventId === undefined || timestamp === undefined || ingestTs === undefined || seq === undefined || userId === undefined) return undefined;
    return new StoredEventText(json, tail, eventId, userId, timestamp, ingestTs, seq);
  }

  /** The API's JSON for this event, cut from the stored text (see storedToOutputJson). */
  outputJson(): string | undefined {
    return storedToOutputJson(this.json, this.#tail);
  }

  #event(): StoredEvent {
    return (this.#parsed ??= JSON.parse(this.json) as StoredEvent);
  }

  get source(): string {
    return this.#event().source;
  }
  get action(): string {
    return this.#event().action;
  }
  get resource(): string {
    return this.#event().resource;
  }
  get decision(): Decision | '' {
    return this.#event().decision;
  }
  get tables(): string[] {
    return this.#event().tables;
  }
  get query(): string {
    return this.#event().query;
  }
  get details(): string {
    return this.#event().details;
  }
  get redacted(): number | undefined {
    return this.#event().redacted;
  }
  get sourceId(): string | undefined {
    return this.#event().sourceId;
  }
  get sourceSeq(): number | undefined {
    return this.#event().sourceSeq;
  }
  get term(): number {
    return this.#event().term;
  }
  get recordHash(): string | undefined {
    return this.#event().recordHash;
  }
  get chainHash(): string | undefined {
    return this.#event().chainHash;
  }
  get fieldCheck(): string | undefined {
    return this.#event().fieldCheck;
  }
  get erased(): Record<string, string> | undefined {
    return this.#event().erased;
  }
  get salt(): string | undefined {
    return this.#event().salt;
  }

  /** As a StoredEvent (which it reads as; see the class comment). */
  asStoredEvent(): StoredEvent {
    return this as unknown as StoredEvent;
  }

  /** JSON.stringify gives the stored event, as for a parsed one. */
  toJSON(): StoredEvent {
    return this.#event();
  }
}
