import type { TierStatus } from '../api.js';
import { formatTime } from './event-table.js';
import { erasureHoldText, standbyHoldText, termHoldText } from '../tier-hold.js';
import { completenessText, somethingMissing } from '../completeness-text.js';
import { ShownText } from './shown-text.js';


function when(ms: number | undefined): string {
  return ms === undefined || ms <= 0 ? 'never' : formatTime(ms);
}

/** A reason local retention keeps events back, in words; nothing when there is none. */
function RetentionHeld({ field, text }: { field: string; text: string | undefined }) {
  if (text === undefined) return null;
  return (
    <>
      <dt>Retention held</dt>
      <dd class="error" data-field={field}>
        {text}
      </dd>
    </>
  );
}

/** The sweep's health from tierStatus: last success and failure, the error, backlog and watermark, and the completeness ledger. */
export function TierHealth({ status }: { status: TierStatus }) {
  const failing = status.lastError !== null && status.lastFailureMs >= status.lastSuccessMs;
  const hold = erasureHoldText(status.erasureHoldSeq);
  const standbyHold = standbyHoldText(status.heldByStandbys);
  const termHold = termHoldText(status.retentionHeldByTerm);
  return (
    <section class="tier-health" aria-labelledby="tier-title">
      <h3 id="tier-title">Tier health</h3>
      <dl>
        <dt>Mode</dt>
        <dd>
          <ShownText text={status.mode} />
        </dd>
        <dt>Last success</dt>
        <dd data-field="lastSuccess">{when(status.lastSuccessMs)}</dd>
        <dt>Last failure</dt>
        <dd data-field="lastFailure">{when(status.lastFailureMs)}</dd>
        <dt>Last error</dt>
        <dd class={failing ? 'error' : ''} data-field="lastError">
          <ShownText text={status.lastError ?? 'none'} />
        </dd>
        <dt>Backlog</dt>
        <dd data-field="backlog">{status.backlog === undefined ? '–' : `${status.backlog.toLocaleString()} events not yet tiered`}</dd>
        {status.deferred !== undefined && status.deferred > 0 && (
          <>
            <dt>Deferred</dt>
            <dd>{status.deferred.toLocaleString()} old events kept until tiered</dd>
          </>
        )}
        <RetentionHeld field="erasureHold" text={hold} />
        <RetentionHeld field="termHold" text={termHold} />
        {standbyHold !== undefined && (
          <>
            <dt>Tiering held</dt>
            <dd data-field="standbyHold">
              <ShownText text={standbyHold} />
            </dd>
          </>
        )}
        <dt>Watermark</dt>
        <dd data-field="watermark">{status.watermark === undefined || status.watermark.seq === 0 ? 'nothing tiered yet' : `seq ${status.watermark.seq}, ingested ${when(status.watermark.ingestTs)}`}</dd>
        {status.ledger !== undefined && (
          <>
            <dt>Completeness</dt>
            <dd class={somethingMissing(status.ledger) ? 'error' : ''} data-field="completeness">
              {completenessText(status.ledger)}
            </dd>
          </>
        )}
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
