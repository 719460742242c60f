import type { TierStatus } from '../api.js';
import { formatTime } from './event-table.js';

function when(ms: number | undefined): string {
  return ms === undefined || ms <= 0 ? 'never' : formatTime(ms);
}

/** The sweep's health from tierStatus: last success and failure, the error, backlog and watermark. */
export function TierHealth({ status }: { status: TierStatus }) {
  const failing = status.lastError !== null && status.lastFailureMs >= status.lastSuccessMs;
  return (
    <section class="tier-health" aria-labelledby="tier-title">
      <h3 id="tier-title">Tier health</h3>
      <dl>
        <dt>Mode</dt>
        <dd>{status.mode}</dd>
        <dt>Last success</dt>
        <dd data-field="lastSuccess">{when(status.lastSuccessMs)}</dd>
        <dt>Last failure</dt>
        <dd data-field="lastFailure">{when(status.lastFailureMs)}</dd>
        <dt>Last error</dt>
        <dd class={failing ? 'error' : ''} data-field="lastError">
          {status.lastError ?? 'none'}
        </dd>
        <dt>Backlog</dt>
        <dd data-field="backlog">{status.backlog === undefined ? '–' : `${status.backlog.toLocaleString()} events not yet tiered`}</dd>
        {status.deferred !== undefined && status.deferred > 0 && (
          <>
            <dt>Deferred</dt>
            <dd>{status.deferred.toLocaleString()} old events kept until tiered</dd>
          </>
        )}
        <dt>Watermark</dt>
        <dd data-field="watermark">{status.watermark === undefined || status.watermark.seq === 0 ? 'nothing tiered yet' : `seq ${status.watermark.seq}, ingested ${when(status.watermark.ingestTs)}`}</dd>
        {status.nextAttemptMs !== undefined && status.mode !== 'none' && (
          <>
            <dt>Next sweep</dt>
            <dd>{when(status.nextAttemptMs)}</dd>
          </>
        )}
      </dl>
    </section>
  );
}
