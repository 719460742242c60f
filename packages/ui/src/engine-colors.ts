/**
 * Badge colours of the engines everyone knows (dark enough for white text, WCAG AA). A Map, not
 * an object: an engine named `constructor` or `__proto__` must not find Object's own properties.
 */
export const KNOWN_ENGINE_COLORS: ReadonlyMap<string, string> = new Map([
  ['auditlake', '#0f766e'],
  ['trino', '#a21caf'],
  ['spark', '#c2410c'],
  ['flink', '#1d4ed8'],
]);

/** Every other engine takes one of these, always the same one for the same name. */
export const ENGINE_PALETTE = ['#4d7c0f', '#b45309', '#0e7490', '#6d28d9', '#be123c', '#475569', '#15803d', '#9d174d'] as const;

/** The badge colour of an engine (matched case-insensitively, as the engine filter does). */
export function engineColor(engine: string): string {
  const name = engine.toLowerCase();
  const known = KNOWN_ENGINE_COLORS.get(name);
  if (known !== undefined) return known;
  // FNV-1a: stable across page loads and browsers, unlike an order-of-appearance palette.
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 0x01000193);
  return ENGINE_PALETTE[(hash >>> 0) % ENGINE_PALETTE.length] as string;
}

/** Decision badge colours: a red DENY and a green ALLOW. */
export const DECISION_COLORS = { DENY: '#b91c1c', ALLOW: '#15803d' } as const;
