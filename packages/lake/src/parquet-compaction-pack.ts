import { AuditError, AuditErrorCode } from '@auditlake/model';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import type { ObjectStore } from './object-store.js';
import { PARQUET_DAY } from './parquet-committer.js';
import { isMarkerOfFormat, markerTextDigest, parseMarkerPack, parseMarkerPackKey, type MarkerPackKind, type MarkerPackName } from './parquet-marker-pack.js';
import { joinKey, type S3Location } from './s3-location.js';

/**
 * Packs of old compaction markers live here, one folder per day:
 * `<event_date>/<first generation>-<last generation>-<digest>.json` (docs/iceberg-layout.md §8).
 */
export const COMPACTION_PACKS_DIR = '_auditlake/compaction-packs';

/** A pack of one day's compaction markers: named and checked as commit marker packs are, its entries named `<generation, 16 digits>.json`. */
export const COMPACTION_MARKER_PACKS: MarkerPackKind = {
  format: 'auditlake-parquet-compaction-pack/1',
  noun: 'compaction marker',
  isMarkerText: (text) => isMarkerOfFormat(text, 'auditlake-parquet-compaction/1'),
};

/** The prefix the packs of `day` are listed under, or with no day every pack of `location`. */
export function compactionPacksPrefix(location: S3Location, day?: string): string {
  return joinKey(location.prefix, `${COMPACTION_PACKS_DIR}/${day === undefined ? '' : `${day}/`}`);
}

/** A pack as its key names it, with its day. */
export interface CompactionPackName extends MarkerPackName {
  day: string;
}

/** What the key `key` under {@link compactionPacksPrefix} names, or undefined for another object. */
function parseCompactionPackKey(location: S3Location, key: string): CompactionPackName | undefined {
  const day = key.slice(compactionPacksPrefix(location).length).split('/')[0] ?? '';
  if (!PARQUET_DAY.test(day)) return undefined;
  const name = parseMarkerPackKey(compactionPacksPrefix(location, day), key);
  return name === undefined ? undefined : { ...name, day };
}

/** One compaction marker read from a pack: its loose key (`compactions/<day>/<generation>.json`), exact text and the pack's URL. */
export interface PackedCompaction {
  key: string;
  text: string;
  url: string;
}

/** Which packs {@link readCompactionPacks} fetches; none given: every pack. */
export interface CompactionPackChoice {
  /** Per day, ranges of generations wanted (both ends in): packs holding any of them. */
  wanted?: ReadonlyMap<string, ReadonlyArray<readonly [number, number]>>;
  /** Per day, the generation a checkpoint folds through: packs holding any generation above it (every pack is listed). */
  above?: Readonly<Record<string, number>>;
}

/**
 * The compaction markers the packs of `location` hold — those `choice` picks, or every pack's —
 * each with the loose key it had under `compactionsPrefix`. Only the wanted days' packs are
 * listed, unless `choice.above` (or nothing) is given: then every pack, or `everyPackListed`
 * when the caller started that listing already. A marker in two packs must be the same
 * text: `AUDIT_INTEGRITY_MISMATCH` naming both packs. A pack edited in place or not a pack is
 * refused (parseMarkerPack).
 */
export async function readCompactionPacks(objects: ObjectStore, location: S3Location, compactionsPrefix: string, choice: CompactionPackChoice = {}, everyPackListed?: Promise<string[]>): Promise<Map<string, PackedCompaction>> {
  const { wanted, above } = choice;
  const days = wanted === undefined || above !== undefined ? [undefined] : [...wanted.keys()];
  const listed = days[0] === undefined && everyPackListed !== undefined ? await everyPackListed : (await mapBounded(days, OBJECT_REQUESTS_IN_FLIGHT_MAX, (day) => objects.list(compactionPacksPrefix(location, day)))).flat();
  const chosen = (pack: CompactionPackName) =>
    (wanted === undefined && above === undefined) ||
    (wanted?.get(pack.day) ?? []).some(([from, to]) => from <= pack.lastSeq && to >= pack.firstSeq) ||
    (above !== undefined && pack.lastSeq > (above[pack.day] ?? 0));
  const packs = listed.map((key) => parseCompactionPackKey(location, key)).filter((pack): pack is CompactionPackName => pack !== undefined && chosen(pack));
  const found = new Map<string, PackedCompaction>();
  await mapBounded(packs, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (pack) => {
    const url = objects.url(pack.key);
    const bytes = await objects.find(pack.key);
    if (bytes === undefined) throw new AuditError(AuditErrorCode.TABLE_INVALID, `the compaction marker pack ${url} was deleted while being read (packs are never deleted)`);
    for (const entry of parseMarkerPack(pack, new TextDecoder().decode(bytes), url, COMPACTION_MARKER_PACKS)) {
      const key = `${compactionsPrefix}${pack.day}/${entry.name}`;
      const other = found.get(key);
      if (other !== undefined && markerTextDigest(other.text) !== markerTextDigest(entry.marker)) {
        throw new AuditError(AuditErrorCode.INTEGRITY_MISMATCH, `the compaction marker ${objects.url(key)} differs between the packs ${other.url} and ${url}: a marker is packed as it was written, so one of them was changed`);
      }
      found.set(key, { key, text: entry.marker, url });
    }
  });
  return found;
}
