import type { EventOutput } from '@auditlake/model';
import { useState } from 'preact/hooks';
import { revealHidden } from '../display-text.js';
import { DecisionBadge, EngineBadge } from './badges.js';
import { ShownText } from './shown-text.js';

/** Tables a row lists at most; "+k more" opens the full event with all of them. */
export const ROW_TABLES_MAX = 3;

export function formatTime(ms: number): string {
  return new Date(ms).toLocaleString(undefined, { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

function EventRow({ event }: { event: EventOutput }) {
  const [open, setOpen] = useState(false);
  const [copied, setCopied] = useState('');
  const json = JSON.stringify(event, null, 2);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(json);
      setCopied('Copied');
    } catch {
      setCopied('Copy failed: select the text and copy it');
    }
  };
  const detailsId = `event-${event.eventId}`;
  return (
    <>
      <tr class={`event-row ${event.decision === 'DENY' ? 'deny' : ''}`} data-event-id={event.eventId}>
        <td class="expand">
          <button type="button" class="icon" aria-expanded={open} aria-controls={detailsId} aria-label={open ? 'Hide the full event' : 'Show the full event'} onClick={() => setOpen(!open)}>
            {open ? '▾' : '▸'}
          </button>
        </td>
        <td class="time" title={formatTime(event.timestamp)}>
          {formatTime(event.timestamp)}
        </td>
        <td class="user" title={revealHidden(event.userId)}>
          <ShownText text={event.userId} />
        </td>
        <td class="engine">
          <EngineBadge engine={event.source} />
        </td>
        <td class="action" title={revealHidden(event.action)}>
          <ShownText text={event.action} />
        </td>
        <td class="decision">
          <DecisionBadge decision={event.decision} />
        </td>
        <td class="tables">
          {event.tables.slice(0, ROW_TABLES_MAX).map((t, i) => (
            <ShownText key={i} class="table-name" text={t} title={t} />
          ))}
          {event.tables.length > ROW_TABLES_MAX && (
            <button type="button" class="link more-tables" aria-controls={detailsId} aria-label={`${event.tables.length - ROW_TABLES_MAX} more tables: show the full event`} onClick={() => setOpen(true)}>
              +{event.tables.length - ROW_TABLES_MAX} more
            </button>
          )}
        </td>
        <td class="query" title={revealHidden(event.query === '' ? event.resource : event.query)}>
          <ShownText text={event.query === '' ? event.resource : event.query} />
        </td>
      </tr>
      {open && (
        <tr class="event-details" id={detailsId}>
          <td colSpan={8}>
            <div class="details-actions">
              <button type="button" onClick={() => void copy()}>
                Copy JSON
              </button>
              <span role="status">{copied}</span>
            </div>
            {/* Shown with its invisible characters as marks; "Copy JSON" copies the exact JSON. */}
            <pre class="event-json">{revealHidden(json)}</pre>
          </td>
        </tr>
      )}
    </>
  );
}

/**
 * Events newest first; each row opens to the event's full JSON with a copy button. Text only,
 * never HTML, with bidi controls and other invisible characters shown as marks. Columns keep
 * their widths whatever an event holds: a long value is cut with an ellipsis (whole in its
 * title), a row lists at most ROW_TABLES_MAX tables and "+k more"; the opened row shows
 * everything.
 */
export function EventTable({ events, caption }: { events: readonly EventOutput[]; caption: string }) {
  return (
    <div class="table-scroll">
      <table class="events">
        <caption class="visually-hidden">{revealHidden(caption)}</caption>
        {/* Fixed column widths (table-layout: fixed): no value, however long, moves a column. */}
        <colgroup>
          <col class="col-expand" />
          <col class="col-time" />
          <col class="col-user" />
          <col class="col-engine" />
          <col class="col-action" />
          <col class="col-decision" />
          <col class="col-tables" />
          <col class="col-query" />
        </colgroup>
        <thead>
          <tr>
            <th scope="col">
              <span class="visually-hidden">Details</span>
            </th>
            <th scope="col">Time</th>
            <th scope="col">User</th>
            <th scope="col">Engine</th>
            <th scope="col">Action</th>
            <th scope="col">Decision</th>
            <th scope="col">Tables</th>
            <th scope="col">Query / resource</th>
          </tr>
        </thead>
        <tbody>
          {events.map((e) => (
            <EventRow key={e.eventId} event={e} />
          ))}
        </tbody>
      </table>
    </div>
  );
}
