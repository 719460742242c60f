import { hash } from 'node:crypto';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { encodeKeyNumber } from './key-number.js';
import type { ObjectStore } from './object-store.js';
import { joinKey, type S3Location } from './s3-location.js';

/** Packs of old commit markers live here, beside `commits/` (docs/iceberg-layout.md §8). */
export const MARKER_PACKS_DIR = '_auditlake/commit-packs';

/** The `format` member of a commit marker pack. */
export const MARKER_PACK_FORMAT = 'auditlake-parquet-commit-pack/1';

/**
 * What one kind of pack holds: commit markers (packed here) or compaction markers
 * (parquet-compaction-packs.ts). Both name their packs and entries alike; they differ in the
 * format member, the words of a message and what an entry must be.
 */
export interface MarkerPackKind {
  format: string;
  /** What an entry is, for messages: "commit marker". */
  noun: string;
  /** True when `text` is a marker of this kind (what a pack may hold, and what packing takes). */
  isMarkerText(text: string): boolean;
}

export const COMMIT_MARKER_PACKS: MarkerPackKind = { format: MARKER_PACK_FORMAT, noun: 'commit marker', isMarkerText: (text) => isMarkerOfFormat(text, 'auditlake-parquet-commit/1') };

/** Hex digits of a pack's content digest in its name, as for `_integrity/` checkpoint packs. */
const PACK_DIGEST_HEX = 16;

/** 128 bits of SHA-256 of a marker's text: copies of one marker (loose, packed) compared without keeping their texts. */
export const markerTextDigest = (text: string) => hash('sha256', text, 'hex').slice(0, 32);

/** A loose commit marker's name in `commits/`: the seq its batch continues from, 16 digits. */
const MARKER_NAME = /^\d{16}\.json$/;

/** A pack's name: the first and last marker key seq it holds, and a digest of its content. */
const PACK_NAME = /^(\d{16})-(\d{16})-([0-9a-f]{16})\.json$/;

/** One marker a pack holds: its name in `commits/` and its text exactly as it was stored loose. */
export interface PackedMarker {
  name: string;
  marker: string;
}

/** A pack object's content. */
interface MarkerPack {
  format: string;
  markers: PackedMarker[];
}

/** What a pack's name says: the key range of the markers it holds (both ends held). */
export interface MarkerPackName {
  key: string;
  firstSeq: number;
  lastSeq: number;
  digest: string;
}

/** The key seq a loose marker's name (`<16 digits>.json`) carries, or undefined for another name. */
export function markerNameSeq(name: string): number | undefined {
  return MARKER_NAME.test(name) ? Number(name.slice(0, 16)) : undefined;
}

/** The prefix every marker pack of `location` is listed under. */
export function markerPacksPrefix(location: S3Location): string {
  return joinKey(location.prefix, `${MARKER_PACKS_DIR}/`);
}

/** What the pack key `key` (under `packsPrefix`, {@link markerPacksPrefix} for commit markers) names, or undefined for another object. */
export function parseMarkerPackKey(packsPrefix: string, key: string): MarkerPackName | undefined {
  const match = PACK_NAME.exec(key.slice(packsPrefix.length));
  if (match === null || !key.startsWith(packsPrefix)) return undefined;
  const firstSeq = Number(match[1]);
  const lastSeq = Number(match[2]);
  return firstSeq <= lastSeq ? { key, firstSeq, lastSeq, digest: match[3] as string } : undefined;
}

/**
 * The key and body of the pack of `markers` (names ascending, each a loose marker's exact text).
 * Named by its first and last marker and a digest of the body, so two packers of the same markers
 * write the same object, and a packer of other markers never replaces a pack.
 */
export function encodeMarkerPack(packsPrefix: string, kind: MarkerPackKind, markers: readonly PackedMarker[]): { key: string; body: string } {
  const first = markers[0];
  const last = markers.at(-1);
  if (first === undefined || last === undefined) throw new TypeError('a marker pack holds at least one marker');
  const body = JSON.stringify({ format: kind.format, markers: [...markers] } satisfies MarkerPack);
  const firstSeq = markerNameSeq(first.name);
  const lastSeq = markerNameSeq(last.name);
  if (firstSeq === undefined || lastSeq === undefined) throw new TypeError(`not ${kind.noun} names: ${first.name}, ${last.name}`);
  const name = `${encodeKeyNumber(firstSeq)}-${encodeKeyNumber(lastSeq)}-${hash('sha256', body, 'hex').slice(0, PACK_DIGEST_HEX)}.json`;
  return { key: `${packsPrefix}${name}`, body };
}

/**
 * The markers a pack holds, checked against its name: a pack that is not one (bad JSON, a wrong
 * shape, markers out of order or outside the range its name gives, a marker that is not a commit
 * marker) is refused with `AUDIT_TABLE_INVALID`, and one whose content is not what its name's
 * digest says — edited after it was written — with `AUDIT_INTEGRITY_MISMATCH`, both naming it:
 * the markers it holds could not be read as written.
 */
export function parseMarkerPack(name: MarkerPackName, text: string, url: string, kind: MarkerPackKind = COMMIT_MARKER_PACKS): PackedMarker[] {
  if (hash('sha256', text, 'hex').slice(0, PACK_DIGEST_HEX) !== name.digest) {
    throw new AuditError(
      AuditErrorCode.INTEGRITY_MISMATCH,
      `the ${kind.noun} pack ${url} does not hold what its name's digest says: it was changed after it was written (packs are created once and never rewritten)`,
    );
  }
  const damaged = (why: string) => new AuditError(AuditErrorCode.TABLE_INVALID, `${url} is not a valid ${kind.noun} pack: ${why}`);
  let pack: unknown;
  try {
    pack = JSON.parse(text);
  } catch (err) {
    throw damaged(`not JSON (${(err as Error).message})`);
  }
  if (typeof pack !== 'object' || pack === null || (pack as MarkerPack).format !== kind.format) throw damaged(`not a ${kind.format} object`);
  const markers = (pack as MarkerPack).markers as unknown;
  if (!Array.isArray(markers) || markers.length === 0) throw damaged('no markers');
  let previous = -1;
  for (const entry of markers as unknown[]) {
    const { name: entryName, marker } = (entry ?? {}) as { name?: unknown; marker?: unknown };
    const seq = typeof entryName === 'string' ? markerNameSeq(entryName) : undefined;
    if (seq === undefined || typeof marker !== 'string') throw damaged(`an entry is not {name: "<16 digits>.json", marker: "<text>"}`);
    if (seq <= previous) throw damaged(`${entryName as string} does not follow the marker before it (names ascend)`);
    previous = seq;
    if (!kind.isMarkerText(marker)) throw damaged(`${entryName as string} is not a ${kind.noun}`);
  }
  const firstSeq = markerNameSeq((markers[0] as PackedMarker).name);
  if (firstSeq !== name.firstSeq || previous !== name.lastSeq) throw damaged(`it holds markers ${encodeKeyNumber(firstSeq ?? 0)} to ${encodeKeyNumber(previous)}, not the range its name gives`);
  return markers as PackedMarker[];
}

/** True when `text` is a JSON object whose `format` is `format`. */
export function isMarkerOfFormat(text: string, format: string): boolean {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && (value as { format?: unknown }).format === format;
  } catch {
    return false;
  }
}

/** The packs under `packsPrefix` whose range holds the marker keyed `seq` (every pack listed: for a writer's rare checks). */
async function packsHolding(objects: ObjectStore, packsPrefix: string, seq: number): Promise<MarkerPackName[]> {
  return (await objects.list(packsPrefix)).flatMap((key) => {
    const pack = parseMarkerPackKey(packsPrefix, key);
    return pack !== undefined && pack.firstSeq <= seq && seq <= pack.lastSeq ? [pack] : [];
  });
}

/** True when a pack under `packsPrefix` holds the marker keyed `seq` (its range does: every pack holds its whole range). */
export async function packHolds(objects: ObjectStore, packsPrefix: string, seq: number): Promise<boolean> {
  return (await packsHolding(objects, packsPrefix, seq)).length > 0;
}

/**
 * The text a pack under `packsPrefix` holds for the marker keyed `seq`, or undefined when no pack
 * holds it: a writer's check that the key it just created was not a packed marker's (a stale
 * leader's create of a key packing freed).
 */
export async function packedMarkerText(objects: ObjectStore, packsPrefix: string, kind: MarkerPackKind, seq: number): Promise<string | undefined> {
  for (const pack of await packsHolding(objects, packsPrefix, seq)) {
    const bytes = await objects.find(pack.key);
    if (bytes === undefined) continue;
    const entry = parseMarkerPack(pack, new TextDecoder().decode(bytes), objects.url(pack.key), kind).find((packed) => markerNameSeq(packed.name) === seq);
    if (entry !== undefined) return entry.marker;
  }
  return undefined;
}
