/**
 * The map `maps` keeps for `path`, made empty the first time: where a process keeps, per tier
 * location, when it first saw each replaced file or snapshot (on a monotonic clock), the lower
 * bound of their age no clock step moves (see the lake's replaced-file grace).
 */
export function seenAt<K>(maps: Map<string, Map<K, number>>, path: string): Map<K, number> {
  let seen = maps.get(path);
  if (seen === undefined) {
    seen = new Map();
    maps.set(path, seen);
  }
  return seen;
}
