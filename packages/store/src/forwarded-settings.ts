import { encodeEvent, isSelfRecord, lostSettingsRecord, SETTINGS_HISTORY_META, SETTINGS_RECORD_META, settingsRecordInForce, UPDATE_SETTINGS_ACTION, type AuditEvent, type EncodedEvent } from '@auditlake/model';

/**
 * A settings record that reaches the leader from a log that diverged (another node's forward,
 * or this node's own outbox after it was cut here and it then won) states a change made on a
 * leader that lost its place: stored as it is when the change was made on this leader's line
 * (its settings history names the record: it took them with the dead leader's metadata, or made
 * them itself), else as audit:UpdateSettingsLost, saying the change is in force nowhere. Decided
 * on the leader, where the settings in force are known: the node it was cut from cannot tell
 * (reviews found it stating a change not in force, and the other way round). Every forwarded
 * event passes here (appendForwarded), whichever way it reached the leader.
 */
export function settingsRecordAsInForce(store: { meta<T>(name: string): T | undefined }, event: EncodedEvent): EncodedEvent {
  if (!event.json.includes(`"${UPDATE_SETTINGS_ACTION}"`)) return event;
  const parsed = JSON.parse(event.json) as AuditEvent;
  if (!isSelfRecord(parsed, UPDATE_SETTINGS_ACTION)) return event;
  if (settingsRecordInForce({ history: store.meta<string[]>(SETTINGS_HISTORY_META), lastRecord: store.meta<string>(SETTINGS_RECORD_META) }, parsed.eventId)) return event;
  const lost = encodeEvent(lostSettingsRecord(parsed));
  if (event.timeAssigned === true) lost.timeAssigned = true;
  return lost;
}
