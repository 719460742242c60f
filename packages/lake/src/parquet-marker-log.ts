import { AuditError, AuditErrorCode } from '@auditlake/model';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { encodeKeyNumber } from './key-number.js';
import type { ObjectStore } from './object-store.js';
import { COMMITS_DIR, markerKeySeq, refuseForeignFiles, type CommitMarker } from './parquet-committer.js';
import { markerNameSeq, markerPacksPrefix, markerTextDigest, parseMarkerPack, parseMarkerPackKey, type MarkerPackName } from './parquet-marker-pack.js';
import { joinKey, type S3Location } from './s3-location.js';

/** The prefix every loose commit marker of `location` is listed under. */
export function commitsPrefix(location: S3Location): string {
  return joinKey(location.prefix, `${COMMITS_DIR}/`);
}

/**
 * A marker as read: parsed, with a digest of its exact text (to compare copies) and the object it
 * was read from (for a packed one, the pack's URL, shared by its markers: a verify holds millions).
 */
interface FoundMarker {
  marker: CommitMarker;
  digest: string;
  url: string;
  packed: boolean;
}

/**
 * The marker keys of a listing of `commits/` (`prefix`), checked before anything is fetched: the
 * folder's own placeholder key (`<prefix>`, as S3 consoles create one) is dropped, and any other
 * key whose name is not a marker's (`<16 digits>.json`) is refused, naming it. Only markers are
 * written there, and readers select markers by name: a marker moved to `<key>.json.bak` was read
 * from the start (verify) but never from a checkpoint (review).
 */
function looseMarkerKeys(objects: ObjectStore, prefix: string, keys: readonly string[]): string[] {
  const markers = keys.filter((key) => key !== prefix);
  const stray = markers.find((key) => markerNameSeq(key.slice(prefix.length)) === undefined);
  if (stray !== undefined) {
    throw new AuditError(AuditErrorCode.INTEGRITY_MISMATCH, `${objects.url(stray)} is not named as a commit marker is (<16 digits>.json): only markers are written there, so it was put there by hand; move it out of the location`);
  }
  return markers;
}

/** Where `found` was read, for a message: the loose object, or the pack and the marker's name in it. */
function whereFound(found: FoundMarker, key: string): string {
  return found.packed ? `${found.url} (marker ${key.slice(key.lastIndexOf('/') + 1)})` : found.url;
}

/**
 * Every commit marker of `location` keyed `fromSeq` or later (every one without it), by key in
 * key order: the loose ones under `commits/` and those maintenance moved into packs
 * (parquet-marker-packing.ts), each once. The loose markers are listed and read before the packs
 * are listed: a loose marker is deleted only after the pack holding it was written, so one found
 * gone meanwhile is in a pack that listing names. A marker both loose and packed (packing waits
 * out a grace period before it deletes the loose copy), or in two packs, must be the same text:
 * two different texts under one key, or a pack lacking a marker of its own key range that the
 * location holds elsewhere, is tampering, `AUDIT_INTEGRITY_MISMATCH` naming both objects. Packs
 * whose range ends below `fromSeq` are not fetched (a reader from a checkpoint fetches none:
 * packs hold only markers at or before the newest checkpoint).
 */
async function readAllMarkers(objects: ObjectStore, location: S3Location, fromSeq: number | undefined): Promise<Map<string, CommitMarker>> {
  const prefix = commitsPrefix(location);
  // `<n>` sorts right before `<n>.json`: the listing starts at the marker keyed `fromSeq`.
  const looseKeys = looseMarkerKeys(objects, prefix, await objects.list(prefix, fromSeq === undefined ? {} : { startAfter: `${prefix}${encodeKeyNumber(fromSeq)}` }));
  const found = new Map<string, FoundMarker>();
  const gone: string[] = [];
  await mapBounded(looseKeys, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (key) => {
    const bytes = await objects.find(key);
    if (bytes === undefined) {
      gone.push(key);
      return;
    }
    const text = new TextDecoder().decode(bytes);
    found.set(key, { marker: parseCommitMarker(location, text, `the commit marker ${objects.url(key)}`, key.slice(prefix.length)), digest: markerTextDigest(text), url: objects.url(key), packed: false });
  });
  const packs = (await objects.list(markerPacksPrefix(location)))
    .map((key) => parseMarkerPackKey(markerPacksPrefix(location), key))
    .filter((pack): pack is MarkerPackName => pack !== undefined && pack.lastSeq >= (fromSeq ?? 0));
  const held = new Map<string, number>();
  await mapBounded(packs, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (pack) => {
    const url = objects.url(pack.key);
    const text = await objects.find(pack.key);
    if (text === undefined) throw new AuditError(AuditErrorCode.TABLE_INVALID, `the commit marker pack ${url} was deleted while being read (packs are never deleted)`);
    const entries = parseMarkerPack(pack, new TextDecoder().decode(text), url);
    held.set(pack.key, entries.length);
    for (const entry of entries) {
      const key = `${prefix}${entry.name}`;
      const copy: FoundMarker = { marker: parseCommitMarker(location, entry.marker, `the commit marker ${entry.name} in ${url}`, entry.name), digest: markerTextDigest(entry.marker), url, packed: true };
      const other = found.get(key);
      if (other === undefined) found.set(key, copy);
      else if (other.digest !== copy.digest) throw differing(objects, key, whereFound(other, key), whereFound(copy, key));
    }
  });
  const missing = gone.find((key) => !found.has(key));
  if (missing !== undefined) throw new AuditError(AuditErrorCode.TABLE_INVALID, `the commit marker ${objects.url(missing)} was listed, is gone, and no commit marker pack holds it (a loose marker is deleted only once a pack holds it)`);
  const keys = [...found.keys()].sort();
  await checkPackRanges(objects, location, packs, held, keys);
  // A pack reaching `fromSeq` may begin below it: only what the loose listing would have listed.
  const from = fromSeq === undefined ? undefined : `${prefix}${encodeKeyNumber(fromSeq)}`;
  return new Map(keys.filter((key) => from === undefined || key > from).map((key) => [key, (found.get(key) as FoundMarker).marker]));
}

/**
 * A commit marker's text, parsed; one naming anything but the location's data files is refused
 * (refuseForeignFiles), and so is one under another name (`name`, a marker name: its key's last
 * part) than its own: a marker is keyed by the seq it continues from (by its last seq, before
 * markers said what they continue from), and readers select markers by key. Moved below a
 * checkpoint, a marker reaching past it is read by no reader starting there (its events hidden
 * from every search): a read from the start (verify) names it.
 */
function parseCommitMarker(location: S3Location, text: string, where: string, name: string): CommitMarker {
  const marker = JSON.parse(text) as CommitMarker;
  refuseForeignFiles(location, where, marker.files);
  const keySeq = markerNameSeq(name);
  const ownSeq = markerKeySeq(marker);
  if (keySeq !== ownSeq) {
    throw new AuditError(
      AuditErrorCode.INTEGRITY_MISMATCH,
      `${where} is named for seq ${keySeq} but ${marker.afterSeq === undefined ? `ends at seq ${String(ownSeq)} (a marker that names no seq it continues from is keyed by its last)` : `continues from seq ${ownSeq}`}: a marker is written under its own key, so it was moved or changed`,
    );
  }
  return marker;
}

function differing(objects: ObjectStore, key: string, one: string, other: string): AuditError {
  return new AuditError(
    AuditErrorCode.INTEGRITY_MISMATCH,
    `the commit marker ${objects.url(key)} differs between ${one} and ${other}: a marker is written once and packed as it was, so one of them was changed`,
  );
}

/**
 * Every pack holds every marker of its key range: a packer packs a run of loose markers with no
 * other pack's range among them, all at or before the newest checkpoint (so all written already),
 * and a loose one is deleted only once a pack holds it. A marker of a pack's range that the pack
 * lacks, found loose or in another pack, means a pack was edited to drop it (or a marker written
 * in its range since): `AUDIT_INTEGRITY_MISMATCH` naming the pack and the marker.
 */
async function checkPackRanges(objects: ObjectStore, location: S3Location, packs: readonly MarkerPackName[], held: ReadonlyMap<string, number>, keys: readonly string[]): Promise<void> {
  const prefix = commitsPrefix(location);
  const seqs = keys.map((key) => markerNameSeq(key.slice(prefix.length)) ?? -1);
  for (const pack of packs) {
    const from = lowerBound(seqs, pack.firstSeq);
    const to = lowerBound(seqs, pack.lastSeq + 1);
    if (to - from === held.get(pack.key)) continue;
    // The failing case only: read the pack again to name a marker it lacks.
    const names = new Set(parseMarkerPack(pack, new TextDecoder().decode(await objects.get(pack.key)), objects.url(pack.key)).map((entry) => entry.name));
    const lacking = keys.slice(from, to).find((key) => !names.has(key.slice(prefix.length))) ?? keys[from];
    throw new AuditError(
      AuditErrorCode.INTEGRITY_MISMATCH,
      `the commit marker pack ${objects.url(pack.key)} covers markers ${encodeKeyNumber(pack.firstSeq)} to ${encodeKeyNumber(pack.lastSeq)} but lacks ${lacking === undefined ? 'one' : objects.url(lacking)}, which the location holds elsewhere: a pack holds every marker of its range, so it was changed (or a marker was written into its range since)`,
    );
  }
}

/** The first index of ascending `seqs` whose value is at least `seq`. */
function lowerBound(seqs: readonly number[], seq: number): number {
  let lo = 0;
  let hi = seqs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((seqs[mid] as number) < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Every commit marker at `location` by key, in key order (oldest first). A first read (`known`
 * undefined) reads the loose markers and the packs (from the marker keyed `afterSeq`, when
 * given: a checkpoint's watermark, through which markers are dropped; a legacy marker keyed by
 * its own last seq is skipped). A later read, given those read before (`known`, by key, as this
 * function returned them), lists and fetches only the loose markers after the last known key:
 * markers are created in key order — a marker is keyed by the watermark seq its batch continues
 * from (zero-padded, so key order is seq order), which is the previous marker's watermark, past
 * its key; a writer continuing from an older watermark finds that key taken (created only if
 * absent) — and packing moves only markers at or before the newest checkpoint into packs. A
 * reader that was idle while markers past what it knew were packed and deleted sees the first
 * new marker not continue from the last it knew ({@link continuesKnown}) and reads afresh; one
 * whose listed marker is gone when fetched (deleted in between) gets undefined and reads afresh.
 */
export async function readMarkersByKey(objects: ObjectStore, location: S3Location, known?: ReadonlyMap<string, CommitMarker>, afterSeq?: number): Promise<Map<string, CommitMarker> | undefined> {
  const keep = (marker: CommitMarker) => afterSeq === undefined || marker.watermark.seq > afterSeq;
  if (known === undefined) return new Map([...(await readAllMarkers(objects, location, afterSeq))].filter(([, marker]) => keep(marker)));
  const prefix = commitsPrefix(location);
  const lastKnown = [...known.keys()].at(-1);
  const startAfter = lastKnown ?? (afterSeq === undefined ? undefined : `${prefix}${encodeKeyNumber(afterSeq)}`);
  const keys = looseMarkerKeys(objects, prefix, await objects.list(prefix, startAfter === undefined ? {} : { startAfter }));
  const read = await mapBounded(keys, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (key) => {
    const bytes = await objects.find(key);
    return bytes === undefined ? undefined : ([key, parseCommitMarker(location, new TextDecoder().decode(bytes), `the commit marker ${objects.url(key)}`, key.slice(prefix.length))] as const);
  });
  // A marker listed and gone when fetched was packed and its loose copy deleted in between (a
  // reader idle past the orphan age): what follows may not say so (it may have been the last),
  // so the caller reads afresh, with the packs.
  if (read.includes(undefined)) return undefined;
  return new Map([...known, ...(read as Array<readonly [string, CommitMarker]>).filter(([, marker]) => keep(marker))]);
}

/**
 * True unless the first marker `read` holds past `knownCount` (what a later read added) fails to
 * continue from what the reader knew: the last known marker's watermark, else the checkpoint's it
 * reads from (`fromSeq`). A gap means markers were packed and deleted while the reader was idle
 * (or the location was tiered to elsewhere in between, which a fresh read handles alike); a
 * legacy marker, which names no seq it continues from, is taken as continuing.
 */
export function continuesKnown(read: ReadonlyMap<string, CommitMarker>, knownCount: number, fromSeq: number | undefined): boolean {
  let index = 0;
  let last: CommitMarker | undefined;
  for (const marker of read.values()) {
    if (index++ < knownCount) {
      last = marker;
      continue;
    }
    const expected = last?.watermark.seq ?? fromSeq;
    return marker.afterSeq === undefined || marker.afterSeq === expected;
  }
  return true;
}
