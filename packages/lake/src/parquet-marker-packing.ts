import { AuditError, AuditErrorCode } from '@auditlake/model';
import { mapBounded, OBJECT_REQUESTS_IN_FLIGHT_MAX } from './bounded-parallel.js';
import { deleteWhileLeader } from './fenced-delete.js';
import { encodeKeyNumber } from './key-number.js';
import { readNewestCheckpoint } from './parquet-checkpoint.js';
import type { CommitMarker } from './parquet-committer.js';
import type { ParquetCompactionContext } from './parquet-compaction.js';
import { commitsPrefix } from './parquet-marker-log.js';
import { COMMIT_MARKER_PACKS, encodeMarkerPack, markerNameSeq, markerPacksPrefix, markerTextDigest, parseMarkerPack, parseMarkerPackKey, type MarkerPackKind, type MarkerPackName, type PackedMarker } from './parquet-marker-pack.js';
import { orphanCutoffMs } from './store-clock.js';

/** When and how much {@link packParquetMarkers} packs. */
export interface MarkerPackLimits {
  /** Markers in one pack: fewer wait for the next run, unless another pack's range ends the run of loose markers. */
  packSize: number;
  /** Most loose markers one run packs, and most it deletes: a location with years of markers is packed over several runs. */
  perRunMax: number;
}

/**
 * 1,000 markers a pack: the checkpoint interval (PARQUET_CHECKPOINT_INTERVAL_MARKERS), so at a
 * steady load each new checkpoint lets one more pack fill, ~17 a day at 1,000 events/s. A year of
 * such load is ~6,000 packs of ~0.5–1 MB instead of ~6 million markers: a verify GETs a thousand
 * times fewer objects, and a first read lists the packs in ~6 LIST pages. Bigger packs would save
 * little more (6,000 GETs at 8 in flight take seconds) while each pack waited longer to fill and
 * a packing run re-read more on a retry. 50,000 a run (~2 minutes of GETs at S3 latencies) packs
 * a year-old location within days of hourly runs, never holding a run for long.
 */
export const MARKER_PACK_LIMITS: MarkerPackLimits = { packSize: 1_000, perRunMax: 50_000 };

/** What one packing step did. */
export interface MarkerPacking {
  /** Loose markers written into new packs (their loose copies stay until the grace period ends). */
  markersPacked: number;
  /** Loose markers deleted: held identically by a pack that has existed for the orphan age. */
  packedMarkersDeleted: number;
}

/** Keys one listing page asks for (the S3 maximum). */
const LIST_PAGE_KEYS = 1000;


/** The loose markers a run deletes (by the pack holding them) and packs, as its listing found them. */
interface LooseMarkers {
  deletable: Map<MarkerPackName, string[]>;
  unpacked: Array<{ key: string; seq: number }>;
}

/**
 * Packs old commit markers of a Parquet location (docs/iceberg-layout.md §8): runs of loose
 * markers at or before the newest log checkpoint — which no committer and no reader starting from
 * it needs — are written into pack objects holding their exact texts
 * (`_auditlake/commit-packs/<first key seq>-<last key seq>-<digest>.json`, created only if absent),
 * and a loose marker is deleted only once a pack holding it, identical, has existed for `minAgeMs`
 * (the orphan age: a reader that listed the marker before the pack existed has long fetched it).
 * Each run first deletes what packs that old hold, then packs what no pack holds, oldest first and
 * at most `limits.perRunMax` of each; a pack never spans another pack's range, so every pack holds
 * every marker of its range (which readers check). A loose marker that differs from its packed
 * copy, or lies in a pack's range that lacks it, is `AUDIT_INTEGRITY_MISMATCH` naming both, and
 * nothing is deleted. Deletes stop when the node stops leading (`fence`), as other cleanups do.
 */
export async function packParquetMarkers(
  context: Pick<ParquetCompactionContext, 'objects' | 'location' | 'fence' | 'now' | 'storeNow'>,
  minAgeMs: number,
  limits: MarkerPackLimits = MARKER_PACK_LIMITS,
): Promise<MarkerPacking> {
  const { objects, location } = context;
  const checkpoint = await readNewestCheckpoint(objects, location);
  if (checkpoint === undefined) return { markersPacked: 0, packedMarkersDeleted: 0 };
  const throughSeq = checkpoint.checkpoint.watermark.seq;
  const series: MarkerSeries = {
    loosePrefix: commitsPrefix(location),
    packsPrefix: markerPacksPrefix(location),
    kind: COMMIT_MARKER_PACKS,
    // A marker keyed `throughSeq` continues from the checkpoint: those keyed below it are at or before it.
    packableBelow: throughSeq,
    packShortRun: false,
    checkPackable: (text, url) => {
      const marker = JSON.parse(text) as CommitMarker;
      if (marker.watermark.seq > throughSeq) throw new Error(`assertion failed: ${url} ends at seq ${marker.watermark.seq}, past the checkpoint at ${throughSeq} it was packed behind`);
    },
  };
  return packMarkerSeries(context, series, await orphanCutoffMs(context.now(), minAgeMs, context.storeNow), limits);
}

/**
 * One series of markers packing works on: loose markers named `<16 digits>.json` under
 * `loosePrefix` (the commit markers; one day's compaction markers), packed under `packsPrefix`.
 */
export interface MarkerSeries {
  loosePrefix: string;
  packsPrefix: string;
  kind: MarkerPackKind;
  /** Loose markers keyed below this are folded by the newest checkpoint: what may be packed. */
  packableBelow: number;
  /** Pack a last run shorter than `packSize` too (a compaction day no longer written to), rather than wait for it to fill. */
  packShortRun: boolean;
  /** Throws when the marker text read from `url` may not be packed (an assertion of what the listing implied). */
  checkPackable?: (text: string, url: string) => void;
}

/**
 * {@link packParquetMarkers} for one series: first deletes what packs older than `cutoffMs` hold
 * (at most `limits.perRunMax`), then packs what no pack holds, oldest first (at most
 * `limits.perRunMax`).
 */
export async function packMarkerSeries(
  context: Pick<ParquetCompactionContext, 'objects' | 'location' | 'fence'>,
  series: MarkerSeries,
  cutoffMs: number,
  limits: MarkerPackLimits,
): Promise<MarkerPacking> {
  const packs = (await context.objects.listObjects(series.packsPrefix))
    .flatMap((object) => {
      const name = parseMarkerPackKey(series.packsPrefix, object.key);
      return name === undefined ? [] : [{ ...name, lastModifiedMs: object.lastModifiedMs }];
    })
    .sort((a, b) => a.firstSeq - b.firstSeq);
  // A listing without LastModified (0) tells no age: nothing is deleted on its account.
  const aged = (pack: { lastModifiedMs: number }) => pack.lastModifiedMs > 0 && pack.lastModifiedMs <= cutoffMs;
  const loose = await listLooseMarkers(context, series, packs, aged, limits.perRunMax);
  let packedMarkersDeleted = 0;
  for (const [pack, keys] of loose.deletable) packedMarkersDeleted += await deletePacked(context, series, pack, keys);
  let markersPacked = 0;
  for (const run of packRuns(loose.unpacked, packs, limits.packSize, series.packShortRun)) markersPacked += await writePack(context, series, run);
  return { markersPacked, packedMarkersDeleted };
}

/**
 * The loose markers of `series` keyed below `series.packableBelow`, oldest first: those in an aged
 * pack's range to delete, those in no pack's range to pack, each list at most `perRunMax`. A young pack's range is skipped (the
 * listing goes on after its last key), so markers waiting out their grace period cost a run no
 * listing pages; so is an aged one's once `perRunMax` are to be deleted.
 */
async function listLooseMarkers(
  context: Pick<ParquetCompactionContext, 'objects'>,
  series: MarkerSeries,
  packs: ReadonlyArray<MarkerPackName & { lastModifiedMs: number }>,
  aged: (pack: { lastModifiedMs: number }) => boolean,
  perRunMax: number,
): Promise<LooseMarkers> {
  const prefix = series.loosePrefix;
  const found: LooseMarkers = { deletable: new Map(), unpacked: [] };
  let deletableCount = 0;
  let cursor: string | undefined;
  listing: for (;;) {
    const page = await context.objects.list(prefix, { ...(cursor === undefined ? {} : { startAfter: cursor }), max: LIST_PAGE_KEYS });
    for (const key of page) {
      cursor = key;
      const seq = markerNameSeq(key.slice(prefix.length));
      if (seq === undefined) continue;
      if (seq >= series.packableBelow) break listing;
      const pack = packHolding(packs, seq);
      if (pack === undefined) {
        // Packs are made oldest first: past a full run's worth of unpacked markers, no more work lies ahead.
        if (found.unpacked.length >= perRunMax) break listing;
        found.unpacked.push({ key, seq });
      } else if (aged(pack) && deletableCount < perRunMax) {
        deletableCount++;
        const keys = found.deletable.get(pack);
        if (keys === undefined) found.deletable.set(pack, [key]);
        else keys.push(key);
      } else {
        cursor = `${prefix}${encodeKeyNumber(pack.lastSeq)}.json`;
        continue listing;
      }
    }
    if (page.length < LIST_PAGE_KEYS) break;
  }
  return found;
}

/** The pack whose range holds `seq` (packs sorted by first seq; an honest packer's never overlap). */
function packHolding<P extends MarkerPackName>(packs: readonly P[], seq: number): P | undefined {
  const at = firstPackAfter(packs, seq) - 1;
  for (let i = at; i >= Math.max(0, at - 1); i--) if ((packs[i] as P).lastSeq >= seq) return packs[i];
  return undefined;
}

/** The index of the first pack whose range begins above `seq`. */
function firstPackAfter(packs: readonly MarkerPackName[], seq: number): number {
  let lo = 0;
  let hi = packs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((packs[mid] as MarkerPackName).firstSeq <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The unpacked markers cut into packs: `packSize` each, a run ended early where another pack's
 * range begins (a pack never spans another's), and a last run shorter than `packSize` left for a
 * later run, when more markers are behind a checkpoint (unless `packShortRun`).
 */
function packRuns(unpacked: ReadonlyArray<{ key: string; seq: number }>, packs: readonly MarkerPackName[], packSize: number, packShortRun: boolean): Array<Array<{ key: string; seq: number }>> {
  const runs: Array<Array<{ key: string; seq: number }>> = [];
  let run: Array<{ key: string; seq: number }> = [];
  for (const marker of unpacked) {
    const previous = run.at(-1);
    const blocked = previous !== undefined && (packs[firstPackAfter(packs, previous.seq)]?.firstSeq ?? Infinity) < marker.seq;
    if (blocked || run.length === packSize) {
      runs.push(run);
      run = [];
    }
    run.push(marker);
  }
  const nextPack = run.length === 0 ? undefined : packs[firstPackAfter(packs, (run.at(-1) as { seq: number }).seq)];
  if (run.length === packSize || (run.length > 0 && (packShortRun || nextPack !== undefined))) runs.push(run);
  return runs;
}

/** Writes the pack of `run` (read now, each as stored); returns how many markers it holds (0: the run changed since it was listed). */
async function writePack(context: Pick<ParquetCompactionContext, 'objects' | 'location' | 'fence'>, series: MarkerSeries, run: ReadonlyArray<{ key: string; seq: number }>): Promise<number> {
  const { objects, location, fence } = context;
  const texts = await mapBounded(run, OBJECT_REQUESTS_IN_FLIGHT_MAX, async ({ key }) => {
    const bytes = await objects.find(key);
    return bytes === undefined ? undefined : new TextDecoder().decode(bytes);
  });
  // One gone since the listing: another packer's run (a deposed leader's) — list again next run.
  if (texts.some((text) => text === undefined)) return 0;
  const markers: PackedMarker[] = run.map(({ key }, i) => {
    const text = texts[i] as string;
    if (!series.kind.isMarkerText(text)) throw new AuditError(AuditErrorCode.TABLE_INVALID, `${objects.url(key)} is not a ${series.kind.noun}; it is not packed (readers fail on it too)`);
    series.checkPackable?.(text, objects.url(key));
    return { name: key.slice(series.loosePrefix.length), marker: text };
  });
  const { key, body } = encodeMarkerPack(series.packsPrefix, series.kind, markers);
  if (!fence.mayCommit()) throw new AuditError(AuditErrorCode.NOT_LEADER, `no longer the leader; ${series.kind.noun} packing of s3://${location.bucket}/${location.prefix} stopped before writing ${objects.url(key)}`);
  // Named by its content: taken means another packer wrote these same markers.
  if (!(await objects.putIfAbsent(key, body, 'application/json')) && new TextDecoder().decode(await objects.get(key)) !== body) {
    throw new Error(`assertion failed: ${objects.url(key)} exists with other content than the same name's digest says`);
  }
  return markers.length;
}

/**
 * Deletes the loose markers `keys` that `pack` (aged past the grace period) holds identically.
 * One it lacks, or holds differently, is tampering: nothing of the pack's is deleted.
 */
async function deletePacked(context: Pick<ParquetCompactionContext, 'objects' | 'location' | 'fence'>, series: MarkerSeries, pack: MarkerPackName, keys: readonly string[]): Promise<number> {
  const { objects, location } = context;
  const prefix = series.loosePrefix;
  const noun = series.kind.noun;
  const url = objects.url(pack.key);
  const packed = new Map(parseMarkerPack(pack, new TextDecoder().decode(await objects.get(pack.key)), url, series.kind).map((entry) => [entry.name, markerTextDigest(entry.marker)]));
  const loose = await mapBounded(keys, OBJECT_REQUESTS_IN_FLIGHT_MAX, async (key) => {
    const bytes = await objects.find(key);
    return { key, digest: bytes === undefined ? undefined : markerTextDigest(new TextDecoder().decode(bytes)) };
  });
  const identical: string[] = [];
  for (const { key, digest } of loose) {
    if (digest === undefined) continue;
    const held = packed.get(key.slice(prefix.length));
    if (held === digest) {
      identical.push(key);
      continue;
    }
    throw new AuditError(
      AuditErrorCode.INTEGRITY_MISMATCH,
      held === undefined
        ? `the ${noun} ${objects.url(key)} lies in the range of the pack ${url}, which lacks it: a pack holds every marker of its range; neither is deleted`
        : `the ${noun} ${objects.url(key)} differs from its copy in the pack ${url}: one of them was changed; neither is deleted`,
    );
  }
  return deleteWhileLeader(objects, identical, context.fence, `deletion of packed ${noun}s of s3://${location.bucket}/${location.prefix}`);
}
