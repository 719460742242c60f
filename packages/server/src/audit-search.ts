import { encodeCursor, type SearchFilter, type StoredEvent } from '@auditlake/model';
import { mergedSearch, newestFirstStream, type MergedEvent } from '@auditlake/query';
import { storedJsonOf, type AuditStore } from '@auditlake/store';
import { eventOutputJson } from './search-response.js';
import type { TieringService } from './tiering-service.js';

/** One page of the merged log. */
export interface SearchPage {
  events: MergedEvent[];
  /** More events match after this page. */
  truncated: boolean;
  /** Where the next page starts (`?cursor=`), when truncated. */
  nextCursor?: string;
  tierNote?: string;
}

/**
 * The most characters of events one page carries: a page that would hold more is cut after the
 * event that passes it (never before its first), marked truncated, with `nextCursor`; the local
 * read stops there too (sizeBoundedBatches), so it bounds memory, not only the answer. Without
 * it a page's size was the limit times the largest event: 200 events planted at ~4 MB each made
 * one answer 816 MB, and four at once ran the node out of heap; with the answer cut but the
 * read not, 5,000 events of escaped control characters (~870 KB stored each) still took three
 * concurrent searches to a crash. Ordinary events (~1 KB) fill 5,000 to a page far below it.
 */
export const PAGE_CHARS_MAX = 32 * 1024 * 1024;

/** How many characters `event` adds to an answer: the stored text of a local event, else its JSON (escapes counted). */
function answerChars(event: MergedEvent): number {
  return storedJsonOf(event)?.length ?? eventOutputJson(event).length;
}

/** Where a size-bounded read stopped: the event time and ingest time of the event that passed the bound. */
export interface ReadCut {
  atMs?: number;
  ingestTs?: number;
}

/**
 * `batches` (the store's order: event time descending, then seq descending, along which ingest
 * time never increases — docs/invariants.md, 3) until their events pass `charsMax` characters,
 * and then only the rest of the events of that event time and ingest time (so the page can
 * still be put in order: every local event at or before that position in it was read); `cut`
 * then holds it. A page built from them holds, of every source, only what is at or before it
 * (AuditSearch.page). Events sharing one event time, as a client may send them all, are cut too.
 */
export async function* sizeBoundedBatches<E extends StoredEvent>(batches: AsyncIterable<readonly E[]>, charsMax: number, cut: ReadCut): AsyncGenerator<E[]> {
  let chars = 0;
  for await (const batch of batches) {
    let end = batch.length;
    for (let i = 0; i < batch.length; i++) {
      const event = batch[i] as E;
      if (cut.atMs === undefined) {
        chars += answerChars(event);
        if (chars > charsMax) Object.assign(cut, { atMs: event.timestamp, ingestTs: event.ingestTs });
      } else if (event.timestamp !== cut.atMs || event.ingestTs !== cut.ingestTs) {
        end = i;
        break;
      }
    }
    if (end > 0) yield batch.slice(0, end);
    // Past the cut's position: nothing more is read (returning closes the store's iterator).
    if (end < batch.length) return;
  }
}

/** How many of `events` fit in {@link PAGE_CHARS_MAX} (at least one). */
function eventsWithinPage(events: readonly MergedEvent[]): number {
  let chars = 0;
  for (let i = 0; i < events.length; i++) {
    chars += answerChars(events[i] as MergedEvent);
    if (chars > PAGE_CHARS_MAX) return i + 1;
  }
  return events.length;
}

/**
 * The audit log as the API reads it: the local store merged with every tier, in one
 * newest-first order (event time, ingest time, eventId), a page at a time.
 */
export class AuditSearch {
  readonly #store: AuditStore;
  readonly #tiering: TieringService;

  constructor(store: AuditStore, tiering: TieringService) {
    this.#store = store;
    this.#tiering = tiering;
  }

  /** True when some history lives only in tiers, so a page must be merged rather than streamed. */
  async hasTiers(): Promise<boolean> {
    return (await this.#tiering.tierSources()).length > 0;
  }

  /** One page; `signal` stops the reading (a client gone, a deadline passed) with its reason. */
  async page(filter: SearchFilter, signal?: AbortSignal): Promise<SearchPage> {
    // The locations and the bound above which all is local: asked once the local page is read (mergedSearch).
    const tiers = () => this.#tiering.tierSources();
    // Text events: a page answered as JSON is cut from the stored text, never parsed.
    const cut: ReadCut = {};
    const local = { batches: sizeBoundedBatches(this.#store.searchBatches(filter, { expectedEvents: filter.limit + 1, textEvents: true, ...(signal ? { signal } : {}) }), PAGE_CHARS_MAX, cut) };
    const localCompleteFromMs = () => this.#tiering.localCompleteFromMs(Date.now());
    const result = await mergedSearch({ local, tiers, filter, localCompleteFromMs, erased: this.#store, ...(signal ? { signal } : {}) });
    let events = result.events;
    let truncated = result.truncated;
    if (cut.atMs !== undefined) {
      // Local events after the cut's position were not read: the page ends there.
      const { atMs, ingestTs = 0 } = cut;
      const older = events.findIndex((event) => event.timestamp < atMs || (event.timestamp === atMs && event.ingestTs < ingestTs));
      if (older >= 0) events = events.slice(0, older);
      truncated = true;
    }
    const fit = eventsWithinPage(events);
    const page: SearchPage = fit < events.length ? { events: events.slice(0, fit), truncated: true } : { events, truncated };
    const last = page.events.at(-1) ?? result.resumeAfter;
    if (page.truncated && last !== undefined) page.nextCursor = encodeCursor(last);
    if (result.tierNote !== undefined) page.tierNote = result.tierNote;
    return page;
  }

  /**
   * The local store's matches in the newest-first order, `filter.limit` of them and then one
   * more if there is one (it says the page is cut: the caller sends a cursor instead of it).
   * Streamed: only one run of equal event times is held at a time.
   */
  localStream(filter: SearchFilter, signal?: AbortSignal): AsyncGenerator<StoredEvent> {
    return newestFirstStream(this.#store.search(filter, { expectedEvents: filter.limit + 1, ...(signal ? { signal } : {}) }), filter.limit + 1);
  }
}
