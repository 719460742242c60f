import { compactionPacksPrefix, COMPACTION_MARKER_PACKS } from './parquet-compaction-pack.js';
import { compactionKeyParts, compactionsPrefix, type ParquetCompactionContext } from './parquet-compaction.js';
import { readNewestCheckpoint } from './parquet-checkpoint.js';
import { packMarkerSeries, type MarkerPackLimits, type MarkerPacking } from './parquet-marker-packing.js';
import { orphanCutoffMs } from './store-clock.js';

/**
 * 100 compaction markers a pack, 5,000 a run. An hourly run writes a marker per compacted day, so
 * the current day gathers ~24 a day (more when passes repeat under a backlog): 100 lets a busy
 * day fill one pack, while a day no longer written to is packed whatever its count (see
 * {@link packCompactionMarkers}). 5,000 a run packs a year of hourly markers (~9,000) in two runs.
 */
export const COMPACTION_PACK_LIMITS: MarkerPackLimits = { packSize: 100, perRunMax: 5_000 };

/**
 * Packs the compaction markers of a Parquet location that the newest log checkpoint folds
 * (`_auditlake/compaction-packs/<day>/…`, docs/iceberg-layout.md §8), per day, as commit markers
 * are packed ({@link packMarkerSeries}: a pack created only if absent, named by its range and
 * content; a loose marker deleted only once a pack holding it identically has existed for
 * `minAgeMs`). Without it every reader's listing of `compactions/` — each search of a tier —
 * grew by a marker per compacted day and maintenance run, for good: ~9,000 a year of hourly runs.
 * Afterwards it holds the markers no checkpoint folds yet and a busy current day's.
 *
 * A day's folded markers are packed once `limits.packSize` wait, or at once when a later day has
 * a compaction (the day is done but for late events: each later compaction of it makes one more
 * small pack). One LIST of `compactions/` finds the days with folded loose markers; only theirs
 * are listed and packed, at most `limits.perRunMax` markers packed and as many deleted a run.
 */
export async function packCompactionMarkers(
  context: Pick<ParquetCompactionContext, 'objects' | 'location' | 'fence' | 'now' | 'storeNow'>,
  minAgeMs: number,
  limits: MarkerPackLimits = COMPACTION_PACK_LIMITS,
): Promise<MarkerPacking> {
  const { objects, location } = context;
  const checkpoint = await readNewestCheckpoint(objects, location);
  const done: MarkerPacking = { markersPacked: 0, packedMarkersDeleted: 0 };
  if (checkpoint === undefined) return done;
  const { generations } = checkpoint.checkpoint;
  const prefix = compactionsPrefix(location);
  const days = new Set<string>();
  const foldedDays = new Set<string>();
  for (const key of await objects.list(prefix)) {
    const parts = compactionKeyParts(prefix, key);
    if (parts === undefined) continue;
    days.add(parts.day);
    if (parts.generation <= (generations[parts.day] ?? 0)) foldedDays.add(parts.day);
  }
  const lastDay = [...days, ...Object.keys(generations)].sort().at(-1);
  const cutoffMs = await orphanCutoffMs(context.now(), minAgeMs, context.storeNow);
  for (const day of [...foldedDays].sort()) {
    const left = { packSize: limits.packSize, perRunMax: limits.perRunMax - Math.max(done.markersPacked, done.packedMarkersDeleted) };
    if (left.perRunMax <= 0) break;
    const series = {
      loosePrefix: `${prefix}${day}/`,
      packsPrefix: compactionPacksPrefix(location, day),
      kind: COMPACTION_MARKER_PACKS,
      packableBelow: (generations[day] ?? 0) + 1,
      packShortRun: day !== lastDay,
    };
    const packing = await packMarkerSeries(context, series, cutoffMs, left);
    done.markersPacked += packing.markersPacked;
    done.packedMarkersDeleted += packing.packedMarkersDeleted;
  }
  return done;
}
