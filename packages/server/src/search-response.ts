import { storedToOutputJson, toEventOutput, type EventOutput } from '@auditlake/model';
import { storedJsonOf } from '@auditlake/store';
import type { SearchPage } from './audit-search.js';

/**
 * One event as the API returns it, as JSON text: for an event read from the local store, cut
 * from the text the store holds (no serialising: a page of 200 events spent about as long in
 * toEventOutput and JSON.stringify as in reading them); for a tiered one, serialised.
 */
export function eventOutputJson(event: EventOutput): string {
  const stored = storedJsonOf(event);
  return (stored === undefined ? undefined : storedToOutputJson(stored)) ?? JSON.stringify(toEventOutput(event));
}

/**
 * The JSON answer to a search: `{events, count, truncated, nextCursor?, tierNote?, stale?}`,
 * the same text JSON.stringify would give for that object.
 */
export function searchResponseJson(page: SearchPage, stale: boolean): string {
  let text = `{"events":[${page.events.map(eventOutputJson).join(',')}],"count":${page.events.length},"truncated":${page.truncated}`;
  if (page.nextCursor !== undefined) text += `,"nextCursor":${JSON.stringify(page.nextCursor)}`;
  if (page.tierNote) text += `,"tierNote":${JSON.stringify(page.tierNote)}`;
  if (stale) text += ',"stale":true';
  return text + '}';
}
