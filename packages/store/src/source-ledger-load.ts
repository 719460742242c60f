import type { Level } from 'level';
import { prefixEnd } from './event-keys.js';
import { LEGACY_SOURCE_LEDGER_PREFIX, parseSourceRangeKey, SOURCE_RANGE_PREFIX, sourceJoinedKey, sourceLastDayKey, sourceRangeKey } from './source-ledger-keys.js';
import { SourceRanges, type RangeWrites } from './source-ranges.js';

/** How the ledger takes the sources a store holds, one by one, within its bounds. */
export interface LedgerAdmission {
  /** Sources tracked so far. */
  tracked(): number;
  /** Most sources tracked one by one; the further ones count with the other sources. */
  readonly sourcesMax: number;
  /** Most ranges the next source taken may keep, given what the ledger holds already. */
  rangesAllowed(): number;
  /** `lastDay`: the source's stored last active day (`h!<sourceId>!t`), if any. */
  admit(sourceId: string, ranges: SourceRanges, lastDay: number | undefined): void;
}

/** A source's ranges as a version before stored them under `g!`, in one value. */
type LegacySourceRanges = Array<[number, number]> | { ranges: Array<[number, number]>; received: number };

function parseLegacy(json: string): SourceRanges {
  const stored = JSON.parse(json) as LegacySourceRanges;
  return Array.isArray(stored) ? new SourceRanges(stored) : new SourceRanges(stored.ranges, stored.received);
}

type Operation = { type: 'put'; key: string; value: string } | { type: 'del'; key: string };

/**
 * Reads the ledger a store holds into `admission`, in sourceId order: first the ranges stored
 * one key per range, then those a version before stored in one `g!<sourceId>` value per source.
 * A source that holds more ranges than the ledger's bounds allow has its oldest joined; one past
 * the bound on sources has its distinct sourceSeqs counted with the other sources' events and
 * its keys deleted. Whatever this changes — the old values deleted, their ranges written a key
 * each, joins, the other sources' count — is written in one synced batch, so a crash keeps the
 * store as it was and the next open does the same again; once written, an open finds nothing
 * to change. Returns the other sources' event count.
 */
export async function loadSourceLedger(db: Level<string, string>, otherKey: string, admission: LedgerAdmission): Promise<number> {
  const storedOther = Number((await db.get(otherKey)) ?? 0);
  let other = storedOther;
  const operations: Operation[] = [];
  const sink = {
    put: (key: string, value: string) => operations.push({ type: 'put', key, value }),
    del: (key: string) => operations.push({ type: 'del', key }),
  };

  /** Takes one source; `legacy` when its ranges are not stored a key per range yet. */
  const take = (sourceId: string, ranges: SourceRanges, legacy: boolean, lastDay?: number) => {
    const writes: RangeWrites = new Map();
    if (admission.tracked() >= admission.sourcesMax) {
      other += ranges.received;
      if (!legacy) {
        for (const [from] of ranges.ranges) sink.del(sourceRangeKey(sourceId, from));
        if (ranges.joined > 0) sink.del(sourceJoinedKey(sourceId));
        if (lastDay !== undefined) sink.del(sourceLastDayKey(sourceId));
      }
      return;
    }
    const joinedBefore = legacy ? 0 : ranges.joined;
    ranges.keepNewest(admission.rangesAllowed(), legacy ? undefined : writes);
    if (legacy) for (const [from, to] of ranges.ranges) writes.set(from, to);
    for (const [from, to] of writes) {
      if (to === null) sink.del(sourceRangeKey(sourceId, from));
      else sink.put(sourceRangeKey(sourceId, from), String(to));
    }
    if (ranges.joined !== joinedBefore) sink.put(sourceJoinedKey(sourceId), String(ranges.joined));
    admission.admit(sourceId, ranges, lastDay);
  };

  const stored = new Map<string, { ranges: Array<[number, number]>; joined: number; lastDay?: number }>();
  for await (const [key, value] of db.iterator({ gte: SOURCE_RANGE_PREFIX, lt: prefixEnd(SOURCE_RANGE_PREFIX) })) {
    const parsed = parseSourceRangeKey(key);
    if (parsed === undefined) continue;
    let source = stored.get(parsed.sourceId);
    if (source === undefined) stored.set(parsed.sourceId, (source = { ranges: [], joined: 0 }));
    if ('joined' in parsed) source.joined = Number(value);
    else if ('lastDay' in parsed) source.lastDay = Number(value);
    else source.ranges.push([parsed.from, Number(value)]);
  }
  for (const sourceId of [...stored.keys()].sort()) {
    const { ranges, joined, lastDay } = stored.get(sourceId) as { ranges: Array<[number, number]>; joined: number; lastDay?: number };
    // A joined count or a day without ranges (nothing writes one alone) holds nothing to track.
    if (ranges.length === 0) continue;
    const spanned = ranges.reduce((n, [from, to]) => n + to - from + 1, 0);
    take(sourceId, new SourceRanges(ranges, spanned - joined), false, lastDay);
  }

  // Read as it is streamed, each source fitted before the next is read: an old store may hold
  // far more ranges than the bounds allow.
  for await (const [key, value] of db.iterator({ gte: LEGACY_SOURCE_LEDGER_PREFIX, lt: prefixEnd(LEGACY_SOURCE_LEDGER_PREFIX) })) {
    sink.del(key);
    const sourceId = key.slice(LEGACY_SOURCE_LEDGER_PREFIX.length);
    // Already moved (no version writes both; kept if one did): the ranges stored a key each win.
    if (stored.has(sourceId)) continue;
    take(sourceId, parseLegacy(value), true);
  }

  if (other !== storedOther) sink.put(otherKey, String(other));
  if (operations.length > 0) await db.batch(operations, { sync: true });
  return other;
}
