import { encodeCursor, type SearchFilter, type StoredEvent } from '@auditlake/model';
import { mergedSearch, newestFirstStream, type MergedEvent } from '@auditlake/query';
import type { AuditStore } from '@auditlake/store';
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

  async page(filter: SearchFilter): Promise<SearchPage> {
    const tiers = await this.#tiering.tierSources();
    // Text events: a page answered as JSON is cut from the stored text, never parsed.
    const local = { batches: this.#store.searchBatches(filter, { expectedEvents: filter.limit + 1, textEvents: true }) };
    const result = await mergedSearch({ local, tiers, filter, localCompleteFromMs: this.#tiering.localCompleteFromMs(Date.now()) });
    const page: SearchPage = { events: result.events, truncated: result.truncated };
    const last = result.events.at(-1);
    if (result.truncated && last !== undefined) page.nextCursor = encodeCursor(last);
    if (result.tierNote !== undefined) page.tierNote = result.tierNote;
    return page;
  }

  /**
   * The local store's matches in the newest-first order, `filter.limit` of them and then one
   * more if there is one (it says the page is cut: the caller sends a cursor instead of it).
   * Streamed: only one run of equal event times is held at a time.
   */
  localStream(filter: SearchFilter): AsyncGenerator<StoredEvent> {
    return newestFirstStream(this.#store.search(filter, { expectedEvents: filter.limit + 1 }), filter.limit + 1);
  }
}
