import type { StoredEvent } from '@auditlake/model';

/**
 * A log entry received from the leader (its JSON as UTF-8): the text, stored as it is, and the parsed event
 * the keys are built from. The fields the keys and the log position need are checked, because
 * a malformed entry would otherwise become a corrupt key or a wrong position.
 */
export function parseReplicatedEntry(bytes: Uint8Array): { event: StoredEvent; json: string } {
  const json = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  const event = JSON.parse(json) as StoredEvent;
  if (
    typeof event !== 'object' ||
    event === null ||
    typeof event.eventId !== 'string' ||
    !isCount(event.seq) ||
    !isCount(event.timestamp) ||
    !isCount(event.ingestTs) ||
    !isCount(event.term)
  ) {
    throw new TypeError(`replicated entry is not a stored event (eventId, seq, timestamp, ingestTs, term): ${json.slice(0, 200)}`);
  }
  return { event, json };
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
