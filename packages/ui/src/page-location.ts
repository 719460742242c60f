import { useEffect, useState } from 'preact/hooks';
import { DEFAULT_MAX_EVENTS, isTimeRange, MAX_EVENTS, type TimeWindow } from './time-range.js';

/** The pages, each at its own URL so it can be linked to and reloaded. */
export const PAGES = [
  { name: 'overview', path: '/admin/audit', title: 'Overview & Graph' },
  { name: 'search', path: '/admin/audit/search', title: 'Search' },
  { name: 'maintenance', path: '/admin/audit/maintenance', title: 'Maintenance' },
] as const;

export type PageName = (typeof PAGES)[number]['name'];

export function pageOf(pathname: string): PageName {
  const path = pathname.replace(/\/+$/, '');
  return PAGES.find((p) => p.path === path)?.name ?? 'overview';
}

export function pathOf(page: PageName): string {
  return PAGES.find((p) => p.name === page)?.path ?? '/admin/audit';
}

/**
 * Where the page is: its path and its query string, which holds all of a page's state (filters,
 * window, the drilled-down node) — never the token. Navigation pushes history entries, so Back
 * and reload return to the same view.
 */
export interface PageLocation {
  page: PageName;
  params: URLSearchParams;
}

function current(): PageLocation {
  return { page: pageOf(location.pathname), params: new URLSearchParams(location.search) };
}

/** Moves to `page` with `params`; `replace` rewrites the current history entry instead. */
export function navigate(page: PageName, params: URLSearchParams, options: { replace?: boolean } = {}): void {
  const query = params.toString();
  const url = pathOf(page) + (query === '' ? '' : `?${query}`);
  if (url === location.pathname + location.search) return;
  if (options.replace === true) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  dispatchEvent(new PopStateEvent('popstate'));
}

/** The current location, re-rendered on Back/Forward and on navigate(). */
export function usePageLocation(): PageLocation {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const update = () => setLoc(current());
    addEventListener('popstate', update);
    return () => removeEventListener('popstate', update);
  }, []);
  return loc;
}

/** The toolbar's window and max events as kept in the query string. */
export interface WindowState {
  window: TimeWindow;
  max: number;
}

export function readWindowState(params: URLSearchParams): WindowState {
  const range = params.get('range') ?? 'any';
  const max = Number(params.get('max'));
  return {
    window: { range: isTimeRange(range) ? range : 'any', from: params.get('from') ?? '', to: params.get('to') ?? '' },
    max: (MAX_EVENTS as readonly number[]).includes(max) ? max : DEFAULT_MAX_EVENTS,
  };
}

/** Writes the window into `params` (defaults left out, so plain URLs stay plain). */
export function writeWindowState(params: URLSearchParams, state: WindowState): URLSearchParams {
  const next = new URLSearchParams(params);
  for (const key of ['range', 'from', 'to', 'max']) next.delete(key);
  if (state.window.range !== 'any') next.set('range', state.window.range);
  if (state.window.range === 'custom') {
    if (state.window.from !== '') next.set('from', state.window.from);
    if (state.window.to !== '') next.set('to', state.window.to);
  }
  if (state.max !== DEFAULT_MAX_EVENTS) next.set('max', String(state.max));
  return next;
}
