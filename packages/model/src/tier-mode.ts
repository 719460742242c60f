import { parseFailure, type ValueParser } from './config-values.js';

export const TIER_MODES = ['none', 'iceberg', 'parquet'] as const;
export type TierMode = (typeof TIER_MODES)[number];

/** With parseNamed gives the reference's message: `audit.tier.mode must be one of none, iceberg, parquet: icebreg`. */
export const tierMode: ValueParser<TierMode> = (v) => {
  const value = v.trim();
  if ((TIER_MODES as readonly string[]).includes(value)) return value as TierMode;
  return parseFailure(`must be one of ${TIER_MODES.join(', ')}`);
};
