import type { EventOutput } from '@auditlake/model';
import { useState } from 'preact/hooks';
import { DecisionBadge, EngineBadge } from './badges.js';

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
        <td class="time">{formatTime(event.timestamp)}</td>
        <td class="user">{event.userId}</td>
        <td>
          <EngineBadge engine={event.source} />
        </td>
        <td class="action">{event.action}</td>
        <td>
          <DecisionBadge decision={event.decision} />
        </td>
        <td class="tables">{event.tables.join(', ')}</td>
        <td class="query" title={event.query}>
          {event.query === '' ? event.resource : event.query}
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
            <pre class="event-json">{json}</pre>
          </td>
        </tr>
      )}
    </>
  );
}

/** Events newest first; each row opens to the event's full JSON with a copy button. Text only, never HTML. */
export function EventTable({ events, caption }: { events: readonly EventOutput[]; caption: string }) {
  return (
    <div class="table-scroll">
      <table class="events">
        <caption class="visually-hidden">{caption}</caption>
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
