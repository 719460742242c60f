import { useState } from 'preact/hooks';
import type { AdminApi, ClusterAnswer, QueryParams, SettingsAnswer, StatsAnswer } from '../api.js';
import { drillRows, FILTER_OF, parseFocus, type DrillRows } from '../drill-down.js';
import type { GraphNode } from '../graph-layout.js';
import { navigate, readWindowState, writeWindowState, type WindowState } from '../page-location.js';
import { STORAGE_FIELDS } from '../settings-form.js';
import { windowBounds } from '../time-range.js';
import { useLoad } from '../use-load.js';
import { useChanged } from '../use-changed.js';
import { ClusterPanel } from './cluster-panel.js';
import { DecisionHistogram } from './decision-histogram.js';
import { EventTable } from './event-table.js';
import { RelationshipGraph } from './relationship-graph.js';
import { SettingsPanel } from './settings-panel.js';
import { TierHealth } from './tier-health.js';
import { TruncationNote, WindowControls } from './toolbar.js';
import { ErrorNote } from './error-note.js';
import { ShownText } from './shown-text.js';

const COUNTERS = [
  ['events', 'Events', undefined],
  ['users', 'Users', undefined],
  ['engines', 'Engines', undefined],
  ['tables', 'Tables', undefined],
  ['reads', 'Reads', 'Engines\' data:Select events'],
  // Events need not add up to reads and writes: the node's own records are neither.
  ['writes', 'Writes', 'Engines\' other events; auditlake\'s own records (refusals, settings changes, checkpoints, maintenance runs) are neither reads nor writes'],
] as const;

/** Rows of a drill-down at most; the Search page, linked from it, shows the rest. */
const DRILL_ROWS_MAX = 100;

/**
 * Overview & Graph: counters, the user → engine → table graph with drill-down, the ALLOW/DENY
 * histogram for the chosen window; the Storage & Retention settings, tier health and the
 * cluster. The window and the drilled-down node live in the URL.
 */
export function OverviewPage({ api, params }: { api: AdminApi; params: URLSearchParams }) {
  const applied = readWindowState(params);
  const [windowState, setWindowState] = useState<WindowState>(applied);
  const focus = parseFocus(params.get('focus'));
  const key = params.toString();
  useChanged(key, () => setWindowState(applied));

  const windowQuery = (): QueryParams => {
    const bounds = windowBounds(applied.window, Date.now());
    if ('error' in bounds) throw new Error(bounds.error);
    return { from: bounds.fromMs, to: bounds.toMs, limit: applied.max };
  };
  const windowKey = [applied.window.range, applied.window.from, applied.window.to, applied.max].join('|');
  const stats = useLoad<StatsAnswer>(async () => api.stats(windowQuery()), [windowKey]);
  const drill = useLoad<(DrillRows & { truncated: boolean }) | undefined>(async () => {
    if (!focus) return undefined;
    const answer = await api.search({ ...windowQuery(), limit: Math.min(DRILL_ROWS_MAX, applied.max), [FILTER_OF[focus.kind]]: focus.name });
    return { ...drillRows(focus, answer.events), truncated: answer.truncated };
  }, [windowKey, focus?.kind, focus?.name]);
  const settings = useLoad<SettingsAnswer>(() => api.settings(), []);
  const cluster = useLoad<ClusterAnswer>(() => api.cluster(), []);

  const apply = (e: Event) => {
    e.preventDefault();
    navigate('overview', writeWindowState(params, windowState));
  };
  const select = (node: GraphNode) => {
    const next = new URLSearchParams(params);
    if (focus !== undefined && `${focus.kind}:${focus.name}` === node.id) next.delete('focus');
    else next.set('focus', node.id);
    navigate('overview', next);
  };
  const refresh = () => {
    stats.reload();
    drill.reload();
    settings.reload();
    cluster.reload();
  };

  const s = stats.value;
  return (
    <section aria-labelledby="overview-title">
      <h2 id="overview-title">Overview &amp; Graph</h2>
      <form class="toolbar" onSubmit={apply}>
        <WindowControls state={windowState} onChange={setWindowState} />
        <button type="submit" class="primary">
          Apply
        </button>
        <button type="button" onClick={refresh}>
          Refresh
        </button>
      </form>
      <ErrorNote message={stats.error} />
      {s && (
        <>
          {s.stale === true && <p class="note">No leader is reachable: this is this node's own copy, which may lag behind.</p>}
          {s.tierNote !== undefined && (
            <p class="note">
              <ShownText text={s.tierNote} />
            </p>
          )}
          {s.truncated && <TruncationNote shown={s.counts.events} />}
          <ul class="counters" aria-label="Summary of the window">
            {COUNTERS.map(([k, label, hint]) => (
              <li key={k} data-counter={k} title={hint}>
                <span class="value">{s.counts[k].toLocaleString()}</span>
                <span class="label">{label}</span>
              </li>
            ))}
          </ul>
          <RelationshipGraph stats={s} focus={focus ? `${focus.kind}:${focus.name}` : undefined} onSelect={select} />
          <section class="drill-down" aria-labelledby="drill-title" aria-live="polite">
            {focus ? (
              <>
                <h3 id="drill-title">
                  {focus.kind}{' '}
                  <q>
                    <ShownText text={focus.name} />
                  </q>
                  : read and write events
                  <button type="button" class="link" onClick={() => select({ id: `${focus.kind}:${focus.name}` } as GraphNode)}>
                    Clear
                  </button>
                  <a
                    class="open-in-search"
                    href={`/admin/audit/search?${writeWindowState(new URLSearchParams({ [FILTER_OF[focus.kind]]: focus.name }), applied).toString()}`}
                    onClick={(e) => {
                      if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
                      e.preventDefault();
                      navigate('search', writeWindowState(new URLSearchParams({ [FILTER_OF[focus.kind]]: focus.name }), applied));
                    }}
                  >
                    Open in Search
                  </a>
                </h3>
                <ErrorNote message={drill.error} />
                {drill.value && (
                  <>
                    {drill.value.truncated && <TruncationNote shown={drill.value.events.length} />}
                    {drill.value.leftOut > 0 && (
                      <p class="note left-out" role="status">
                        {drill.value.leftOut} {drill.value.leftOut === 1 ? 'event' : 'events'} of other tables whose names contain this one left out: the search's table filter
                        matches part of a name, so Open in Search lists them too.
                      </p>
                    )}
                    <EventTable events={drill.value.events} caption={`Events of ${focus.kind} ${focus.name}`} />
                  </>
                )}
              </>
            ) : (
              <p id="drill-title" class="hint">
                Select a user, engine or table in the graph to see its events here.
              </p>
            )}
          </section>
          <h3>Events over time</h3>
          <DecisionHistogram histogram={s.histogram} />
        </>
      )}
      <div class="panels">
        <ErrorNote message={settings.error} />
        {settings.value && (
          <>
            <SettingsPanel api={api} settings={settings.value} onSaved={(next) => settings.set(next)} fields={STORAGE_FIELDS} title="Storage & Retention" name="storage-panel" />
            <TierHealth status={settings.value.tierStatus} />
          </>
        )}
        <ErrorNote message={cluster.error} />
        {cluster.value && <ClusterPanel cluster={cluster.value} />}
      </div>
    </section>
  );
}
