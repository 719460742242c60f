import { encodeCursor, type SearchFilter, type StoredEvent } from '@auditlake/model';
import { mergedSearch, newestFirstStream, type MergedEvent } from '@auditlake/query';
import { storedJsonOf, type AuditStore } from '@auditlake/store';
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
 * event that passes it (never before its first), marked truncated, with `nextCursor`. Without
 * it a page's size was the limit times the largest event: 200 events planted at ~4 MB each made
 * one answer 816 MB, and four at once ran the node out of heap. Ordinary events (~1 KB) fill
 * 5,000 to a page far below it.
 */
export const PAGE_CHARS_MAX = 32 * 1024 * 1024;

/** About how many characters `event` adds to an answer: the stored text of a local event, else its fields. */
function answerChars(event: MergedEvent): number {
  const json = storedJsonOf(event);
  if (json !== undefined) return json.length;
  let chars = 200 + event.eventId.length + event.userId.length + event.source.length + event.action.length + event.resource.length + event.query.length + event.details.length;
  for (const table of event.tables) chars += table.length + 3;
  return chars;
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
    const tiers = await this.#tiering.tierSources();
    // Text events: a page answered as JSON is cut from the stored text, never parsed.
    const local = { batches: this.#store.searchBatches(filter, { expectedEvents: filter.limit + 1, textEvents: true, ...(signal ? { signal } : {}) }) };
    const result = await mergedSearch({ local, tiers, filter, localCompleteFromMs: this.#tiering.localCompleteFromMs(Date.now()), ...(signal ? { signal } : {}) });
    const fit = eventsWithinPage(result.events);
    const page: SearchPage = fit < result.events.length ? { events: result.events.slice(0, fit), truncated: true } : { events: result.events, truncated: result.truncated };
    const last = page.events.at(-1);
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
