import { useEffect, useState } from 'preact/hooks';
import type { AdminApi, QueryParams } from '../api.js';
import { download, toCsv, toNdjson } from '../event-export.js';
import { navigate, readWindowState, writeWindowState, type WindowState } from '../page-location.js';
import { FILTER_FIELDS, readFilters, type Filters } from '../search-form.js';
import { firstPage, olderPage, type SearchResults } from '../search-results.js';
import { windowBounds } from '../time-range.js';
import { EventTable } from './event-table.js';
import { TruncationNote, WindowControls } from './toolbar.js';
import { ErrorNote } from './error-note.js';
import { useChanged } from '../use-changed.js';
import { HiddenCharactersNote, ShownText } from './shown-text.js';

/**
 * Search: free text plus user, engine, table, type, decision, time range and max results over
 * the whole log (local and tiered). The form's state is the URL's query string, so a search
 * can be linked and survives a reload; "Load older" pages on with the API's cursor.
 */
export function SearchPage({ api, params }: { api: AdminApi; params: URLSearchParams }) {
  const applied = { filters: readFilters(params), window: readWindowState(params) };
  const [filters, setFilters] = useState<Filters>(applied.filters);
  const [windowState, setWindowState] = useState<WindowState>(applied.window);
  const [result, setResult] = useState<SearchResults | undefined>();
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const key = params.toString();

  const apiParams = (state: WindowState, f: Filters): { params: QueryParams } | { error: string } => {
    const bounds = windowBounds(state.window, Date.now());
    if ('error' in bounds) return bounds;
    return { params: { ...f, action: f.action === 'all' ? '' : f.action, from: bounds.fromMs, to: bounds.toMs, limit: state.max } };
  };

  // The URL is the source of truth: a change of it (a submit, Back) resets the form to it…
  useChanged(key, () => {
    setFilters(applied.filters);
    setWindowState(applied.window);
  });
  // …and every change of it (and the first display) runs the search.
  useEffect(() => {
    const query = apiParams(applied.window, applied.filters);
    if ('error' in query) {
      setError(query.error);
      return;
    }
    let cancelled = false;
    setBusy(true);
    setError('');
    firstPage(api, query.params).then(
      (first) => {
        if (cancelled) return;
        setResult(first);
        setBusy(false);
      },
      (err: unknown) => {
        if (cancelled) return;
        setResult(undefined);
        setError(err instanceof Error ? err.message : String(err));
        setBusy(false);
      },
    );
    return () => {
      cancelled = true;
    };
  }, [key]);

  const submit = (e: Event) => {
    e.preventDefault();
    const next = new URLSearchParams();
    for (const f of FILTER_FIELDS) if (filters[f] !== '' && !(f === 'action' && filters[f] === 'all')) next.set(f, filters[f]);
    navigate('search', writeWindowState(next, windowState));
  };

  const loadOlder = async () => {
    if (!result?.nextCursor) return;
    setBusy(true);
    try {
      setResult(await olderPage(api, result));
      setError('');
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };

  const field = (name: (typeof FILTER_FIELDS)[number], label: string, placeholder = '') => (
    <label>
      {label}
      <input name={name} value={filters[name]} placeholder={placeholder} onInput={(e) => setFilters({ ...filters, [name]: e.currentTarget.value })} />
      <HiddenCharactersNote value={filters[name]} />
    </label>
  );
  const stamp = new Date().toISOString().replaceAll(':', '-').slice(0, 19);

  return (
    <section aria-labelledby="search-title">
      <h2 id="search-title">Search</h2>
      <form class="search-form" role="search" onSubmit={submit}>
        <label class="free-text">
          Free text
          <input name="q" type="search" value={filters.q} placeholder="query, details, resource, user, action or table" onInput={(e) => setFilters({ ...filters, q: e.currentTarget.value })} />
          <HiddenCharactersNote value={filters.q} />
        </label>
        <div class="toolbar">
          {field('user', 'User', 'exact id')}
          {field('engine', 'Engine', 'trino, spark…')}
          {field('table', 'Table', 'part of a name')}
          <label>
            Type
            <select name="action" value={filters.action === '' ? 'all' : filters.action} onChange={(e) => setFilters({ ...filters, action: e.currentTarget.value })}>
              <option value="all">read·write</option>
              <option value="read">read</option>
              <option value="write">write</option>
            </select>
          </label>
          <label>
            Decision
            <select name="decision" value={filters.decision} onChange={(e) => setFilters({ ...filters, decision: e.currentTarget.value })}>
              <option value="">any</option>
              <option value="ALLOW">ALLOW</option>
              <option value="DENY">DENY</option>
              <option value="none">none</option>
            </select>
          </label>
          <WindowControls state={windowState} onChange={setWindowState} />
          <button type="submit" class="primary">
            Search
          </button>
        </div>
      </form>
      <div class="status-line" role="status" aria-live="polite">
        {busy ? 'Searching…' : result ? `${result.events.length} ${result.events.length === 1 ? 'event' : 'events'}` : ''}
      </div>
      <ErrorNote message={error} />
      {result && (
        <>
          {result.stale && <p class="note">No leader is reachable: this is this node's own copy, which may lag behind.</p>}
          {result.tierNote !== undefined && (
            <p class="note">
              <ShownText text={result.tierNote} />
            </p>
          )}
          {result.truncated && <TruncationNote shown={result.events.length} />}
          <div class="result-actions">
            <button type="button" disabled={result.events.length === 0} onClick={() => download(`auditlake-events-${stamp}.ndjson`, 'application/x-ndjson', toNdjson(result.events))}>
              Export NDJSON
            </button>
            <button type="button" disabled={result.events.length === 0} onClick={() => download(`auditlake-events-${stamp}.csv`, 'text/csv', toCsv(result.events))}>
              Export CSV
            </button>
          </div>
          <EventTable events={result.events} caption="Matching events, newest first" />
          {result.nextCursor !== undefined && (
            <button type="button" class="load-older" disabled={busy} onClick={() => void loadOlder()}>
              Load older
            </button>
          )}
        </>
      )}
    </section>
  );
}
