/** Authorization outcome of an access; absent where no allow/deny applies. */
export type Decision = 'ALLOW' | 'DENY';

/**
 * An event as validated and normalised at ingest, before the leader orders it.
 * Optional input fields are normalised to '' (strings) or [] (tables) so every stored event
 * has the same shape.
 */
export interface AuditEvent {
  eventId: string;
  userId: string;
  source: string;
  action: string;
  resource: string;
  decision: Decision | '';
  tables: string[];
  query: string;
  details: string;
  /**
   * How many values of `audit.redact.keys` were masked in `query` and `details` at ingest.
   * Present only when some were: absent means none.
   */
  redacted?: number;
  /**
   * The sending source's own identity (a plugin instance, a connector), when it numbers what it
   * sends: the completeness ledger finds gaps in `sourceSeq` per `sourceId`.
   */
  sourceId?: string;
  /** The source's sequence number for this event, increasing per `sourceId`. */
  sourceSeq?: number;
  /** Event time, epoch ms: when the access happened, as reported by the engine. */
  timestamp: number;
}

/** An event as the leader stored it: with its place in the one cluster-wide order. */
export interface StoredEvent extends AuditEvent {
  /** When the event reached the leader (leader clock, never decreasing), epoch ms. */
  ingestTs: number;
  /** Cluster-wide ingest order, assigned by the leader, starting at 1. */
  seq: number;
  /** The leadership term of the leader that assigned `seq` (0 on a node without a coordinator). */
  term: number;
  /** SHA-256 of the record's canonical encoding (docs/integrity.md); absent on records stored before the chain. */
  recordHash?: string;
  /** SHA-256 of the previous record's chainHash and this recordHash. */
  chainHash?: string;
  /** 4 hex digits per field, to name an altered field. */
  fieldCheck?: string;
  /** Field hashes kept for erased fields, by field name. */
  erased?: Record<string, string>;
  /**
   * The record's salt (docs/integrity.md, "Salted field hashes"): its key K, or after an
   * erasure the salts of the fields not erased. Absent on records hashed unsalted (before v3).
   */
  salt?: string;
}

/** The event JSON the HTTP API returns (docs/http-api.md, "Events"). */
export interface EventOutput extends AuditEvent {
  ingestTs: number;
}

/** The action that read sampling applies to, and that `action=read` selects. */
export const READ_ACTION = 'data:Select';

/** Source of events auditlake records about itself (settings changes, refused access). */
export const SELF_SOURCE = 'auditlake';

/**
 * Actions of source `auditlake` that make the record chain provable (docs/integrity.md): only
 * auditlake itself records them; an ingest request carrying one is refused.
 */
export const INTEGRITY_ACTIONS = {
  /** A signed checkpoint of the chain; details is the signed checkpoint. */
  checkpoint: 'integrity:Checkpoint',
  /** A node's public key, registered before it signs; details is the published key. */
  registerKey: 'integrity:RegisterKey',
  /** Fields of earlier records were erased; details names them. */
  erase: 'audit:EraseFields',
} as const;

const PRINTABLE_ASCII = /^[\x21-\x7e]*$/;

/**
 * Characters that render like a letter of "auditlake", folded to it; `i`, `l` and what looks
 * like either (capital I, 1, |, dotless i, Greek iota, Cyrillic і and ӏ…) fold to one letter,
 * `l`. Not Unicode's whole confusables table: only what could pass for this one word.
 */
const LOOKALIKES: ReadonlyMap<string, string> = new Map(
  Object.entries({
    a: 'аɑαᴀ',
    u: 'υսʋᴜ',
    d: 'ԁɗɖđ',
    t: 'тτᴛŧ',
    k: 'кκⲕĸᴋқƙҝҟ',
    e: 'еҽεᴇ',
    l: 'i1|!ıɩιіӏǀłʟɪ',
  }).flatMap(([letter, alikes]) => [...alikes].map((alike): [string, string] => [alike, letter])),
);

/** `text` with every look-alike of a letter of "auditlake" folded to that letter (see LOOKALIKES). */
function lookalikeSkeleton(text: string): string {
  let skeleton = '';
  for (const c of text) skeleton += LOOKALIKES.get(c) ?? c;
  return skeleton;
}

const SELF_SKELETON = lookalikeSkeleton(SELF_SOURCE);

/**
 * True for a source that reads as auditlake's own: its name once Unicode-normalised (NFKC),
 * stripped of white space, of characters that render as nothing (zero-width spaces, bidi
 * controls) and of accents, lower-cased, and with letters of other scripts (or digits) that look
 * like those of "auditlake" folded to them (`аuditlake` with a Cyrillic а, `audit1ake`); a
 * non-ASCII name of nine letters whose ASCII letters are those of the word in their places
 * reads as it too, whatever stands in for the others. Only auditlake records events of its own
 * source (settings changes, refused access, maintenance runs, its integrity records): a client
 * that could send one could forge an admin's settings change or blame another client for a
 * refusal, in a record that looks like the genuine one.
 */
export function isSelfSource(source: string): boolean {
  // Nearly every source is printable ASCII without spaces, which NFKC leaves as it is and which
  // holds nothing to strip: compared at once (this runs for every event ingested).
  // Punctuation and symbols are dropped too: `auditlake.`, `audit-lake`, `(auditlake)` read as
  // the name beside the genuine records (review). All but `|` and `!`, which read as l.
  if (PRINTABLE_ASCII.test(source)) {
    const kept = source.toLowerCase().replace(/[^a-z0-9|!]/g, '');
    return kept.length === SELF_SOURCE.length && lookalikeSkeleton(kept) === SELF_SKELETON;
  }
  const folded = source
    .normalize('NFKC')
    // Also control characters and blanks that are neither (a Braille blank, the Hangul fillers).
    .replace(/[\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Cc}\u2800\u115f\u1160\u3164\uffa0]/gu, '')
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase();
  // A letter of another script in place of one of the word's reads as it (whether or not the
  // table above knows it: ꬲ, ꙇ, ꞇ…): what remains of the word must be in its place.
  const letters = [...lookalikeSkeleton(folded).replace(/[\p{P}\p{S}]/gu, '')];
  return letters.length === SELF_SKELETON.length && letters.every((c, i) => c === SELF_SKELETON[i] || (c.codePointAt(0) as number) > 0x7f);
}

/**
 * Whether an event is auditlake's own record of `action` (an integrity event, a settings
 * change): of source auditlake, with that action, and not a refusal. The deny recorder records
 * a request it refused under the action the request asked for, with decision DENY (who tried to
 * erase or to change settings is worth an auditor's eye). Such a record states no erasure and no
 * change: read as one, its details (the refusal's words) failed verify and a leader dropped it
 * as an erasure naming nothing, so one request with an ingest token did both.
 */
export function isSelfRecord(event: { source: string; action: string; decision: string }, action: string): boolean {
  return event.source === SELF_SOURCE && event.action === action && event.decision !== 'DENY';
}

/** True for an action only auditlake itself may record. */
export function isReservedAction(source: string, action: string): boolean {
  return source === SELF_SOURCE && (action === INTEGRITY_ACTIONS.checkpoint || action === INTEGRITY_ACTIONS.registerKey || action === INTEGRITY_ACTIONS.erase);
}

/**
 * Only the fields an event had when it was received (drops ingestTs, seq, term, chain fields,
 * extras), in the order the stored JSON keeps them: `redacted`, `sourceId` and `sourceSeq`,
 * when present, come before `timestamp`, because the stored text must end with timestamp,
 * ingestTs, seq and term (and the chain fields; docs/integrity.md, "Stored layout").
 */
export function toAuditEvent(event: AuditEvent): AuditEvent {
  const redacted = event.redacted !== undefined && event.redacted > 0;
  if (redacted || event.sourceId !== undefined || event.sourceSeq !== undefined) {
    return {
      eventId: event.eventId,
      userId: event.userId,
      source: event.source,
      action: event.action,
      resource: event.resource,
      decision: event.decision,
      tables: event.tables,
      query: event.query,
      details: event.details,
      ...(redacted ? { redacted: event.redacted } : {}),
      ...(event.sourceId !== undefined ? { sourceId: event.sourceId } : {}),
      ...(event.sourceSeq !== undefined ? { sourceSeq: event.sourceSeq } : {}),
      timestamp: event.timestamp,
    };
  }
  // Two literals rather than a conditional spread: this runs for every ingested event.
  return {
    eventId: event.eventId,
    userId: event.userId,
    source: event.source,
    action: event.action,
    resource: event.resource,
    decision: event.decision,
    tables: event.tables,
    query: event.query,
    details: event.details,
    timestamp: event.timestamp,
  };
}

/** Strips internal fields (seq, term, chain fields) so the API shape stays exactly the contract's. */
export function toEventOutput(event: EventOutput): EventOutput {
  return { ...toAuditEvent(event), ingestTs: event.ingestTs };
}
