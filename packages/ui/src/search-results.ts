import type { EventOutput } from '@auditlake/model';
import type { AdminApi, QueryParams } from './api.js';

/** A search's events so far, and what it takes to page on. */
export interface SearchResults {
  /**
   * What the first page was asked with: absolute from/to, so "Load older" continues that very
   * window. Recomputed at the click, "Last hour" would have moved on and its cursor skipped the
   * events between the old and the new start.
   */
  query: QueryParams;
  events: EventOutput[];
  truncated: boolean;
  nextCursor: string | undefined;
  tierNote: string | undefined;
  stale: boolean;
}

/** The first page of a search. */
export async function firstPage(api: Pick<AdminApi, 'search'>, query: QueryParams): Promise<SearchResults> {
  const answer = await api.search(query);
  return { query, events: answer.events, truncated: answer.truncated, nextCursor: answer.nextCursor, tierNote: answer.tierNote, stale: answer.stale === true };
}

/** `results` with the next older page after them: the same query, from the cursor. */
export async function olderPage(api: Pick<AdminApi, 'search'>, results: SearchResults): Promise<SearchResults> {
  const answer = await api.search({ ...results.query, cursor: results.nextCursor });
  return { ...results, events: [...results.events, ...answer.events], truncated: answer.truncated, nextCursor: answer.nextCursor, tierNote: answer.tierNote ?? results.tierNote };
}
