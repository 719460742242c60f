import { useState } from 'preact/hooks';
import type { AdminApi, MaintenanceRegistrationView, MaintenanceRunView, SettingsAnswer } from '../api.js';
import { DECISION_COLORS } from '../engine-colors.js';
import { formatBytes, formatDuration } from '../format-figures.js';
import { markersPackedText, smallFilesNote } from '../maintenance-notes.js';
import { MAINTENANCE_FIELDS } from '../settings-form.js';
import { useLoad } from '../use-load.js';
import { formatTime } from './event-table.js';
import { SettingsPanel } from './settings-panel.js';
import { ErrorNote } from './error-note.js';
import { ShownText } from './shown-text.js';

function RunRow({ run }: { run: MaintenanceRunView }) {
  return (
    <tr class={run.ok ? '' : 'deny'}>
      <td>{formatTime(run.startedMs)}</td>
      <td>{formatDuration(run.finishedMs - run.startedMs)}</td>
      <td>
        {run.ok ? (
          <>
            <span class="badge" style={{ backgroundColor: DECISION_COLORS.ALLOW }}>
              OK
            </span>
            {run.compactionDeferred ? (
              <>
                {' '}
                <ShownText class="run-note" text={`compaction deferred: ${run.compactionDeferred}`} />
              </>
            ) : null}
            {smallFilesNote(run) !== undefined ? (
              <>
                {' '}
                <ShownText class="run-note" text={smallFilesNote(run) as string} />
              </>
            ) : null}
          </>
        ) : (
          <>
            <span class="badge" style={{ backgroundColor: DECISION_COLORS.DENY }}>
              FAILED
            </span>{' '}
            <ShownText class="run-error" text={run.error ?? ''} />
          </>
        )}
      </td>
      <td class="trigger">
        <ShownText text={run.trigger} />
      </td>
      <td>{run.filesRewritten.toLocaleString()}</td>
      <td>{run.filesAdded.toLocaleString()}</td>
      <td>{run.snapshotsExpired.toLocaleString()}</td>
      <td>{run.filesDeleted.toLocaleString()}</td>
      <td>{run.orphansDeleted.toLocaleString()}</td>
      <td>{(run.checkpointsPacked ?? 0).toLocaleString()}</td>
      <td>{markersPackedText(run)}</td>
      <td>
        {formatBytes(run.bytesBefore)} → {formatBytes(run.bytesAfter)}
      </td>
    </tr>
  );
}

/** One registered table: where it lives, when it runs next, "Run now", and its last runs. */
function TableCard({ api, registration, onRan }: { api: AdminApi; registration: MaintenanceRegistrationView; onRan: () => void }) {
  const [running, setRunning] = useState(false);
  const [message, setMessage] = useState<{ text: string; failed: boolean } | undefined>();
  const runNow = async () => {
    setRunning(true);
    setMessage(undefined);
    try {
      const run = await api.runMaintenance(registration.table);
      setMessage(run.ok ? { text: `Finished in ${formatDuration(run.finishedMs - run.startedMs)}`, failed: false } : { text: `Failed: ${run.error ?? 'unknown error'}`, failed: true });
    } catch (err) {
      setMessage({ text: err instanceof Error ? err.message : String(err), failed: true });
    } finally {
      setRunning(false);
      onRan();
    }
  };
  const id = `table-${registration.table.replaceAll('.', '-')}`;
  return (
    <section class="maintenance-table" data-table={registration.table} aria-labelledby={id}>
      <h3 id={id}>
        <ShownText text={registration.table} />
      </h3>
      <dl>
        <dt>Location</dt>
        <dd>
          <ShownText text={registration.location} />
        </dd>
        <dt>Schedule</dt>
        <dd>
          <code>
            <ShownText text={registration.cron} />
          </code>
        </dd>
        <dt>Next run</dt>
        <dd data-field="nextRun">{registration.nextRunMs === null ? 'not scheduled on this node' : formatTime(registration.nextRunMs)}</dd>
      </dl>
      <div class="form-actions">
        <button type="button" class="primary" disabled={running} onClick={() => void runNow()}>
          {running ? 'Running…' : 'Run now'}
        </button>
        <span role="status" class={message?.failed === true ? 'error' : ''}>
          <ShownText text={message?.text ?? ''} />
        </span>
      </div>
      {registration.runs.length === 0 ? (
        <p class="hint">No run yet.</p>
      ) : (
        <div class="table-scroll">
          <table class="runs">
            <caption>
              Last runs of <ShownText text={registration.table} />, newest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Started</th>
                <th scope="col">Took</th>
                <th scope="col">Result</th>
                <th scope="col">Trigger</th>
                <th scope="col">Files rewritten</th>
                <th scope="col">Files added</th>
                <th scope="col">Snapshots expired</th>
                <th scope="col">Files deleted</th>
                <th scope="col">Orphans deleted</th>
                <th scope="col">Checkpoints packed</th>
                <th scope="col">Markers packed</th>
                <th scope="col">Size</th>
              </tr>
            </thead>
            <tbody>
              {registration.runs.map((run) => (
                <RunRow key={`${run.startedMs}-${run.trigger}`} run={run} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/**
 * Maintenance: the schedule and retention rules (runtime settings, saved through the settings
 * API), then each table registered for maintenance with its next run, its last runs and their
 * figures, and "Run now".
 */
export function MaintenancePage({ api }: { api: AdminApi; params: URLSearchParams }) {
  const maintenance = useLoad(() => api.maintenance(), []);
  const settings = useLoad<SettingsAnswer>(() => api.settings(), []);
  const registrations = maintenance.value?.registrations ?? [];
  return (
    <section aria-labelledby="maintenance-title">
      <h2 id="maintenance-title">Maintenance</h2>
      <div class="toolbar">
        <button type="button" onClick={() => (maintenance.reload(), settings.reload())}>
          Refresh
        </button>
      </div>
      <ErrorNote message={maintenance.error} />
      {maintenance.value?.stale === true && <p class="note">No leader is reachable: this is this node's own view, which may lag behind.</p>}
      {maintenance.value && registrations.length === 0 && (
        <p class="hint" data-empty="registrations">
          No table is registered for maintenance. A table is registered when tiering writes to Iceberg (tier mode iceberg) with maintenance enabled.
        </p>
      )}
      {registrations.map((r) => (
        <TableCard key={r.table} api={api} registration={r} onRan={maintenance.reload} />
      ))}
      <div class="panels">
        <ErrorNote message={settings.error} />
        {settings.value && (
          <SettingsPanel
            api={api}
            settings={settings.value}
            onSaved={(next) => {
              settings.set(next);
              // A changed schedule or target re-registers tables: show the new registrations.
              maintenance.reload();
            }}
            fields={MAINTENANCE_FIELDS}
            title="Schedule & retention"
            name="maintenance-settings"
          />
        )}
      </div>
    </section>
  );
}
