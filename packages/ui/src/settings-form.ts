/** The Storage & Retention fields: the runtime settings the panel edits, in display order. */
export const STORAGE_FIELDS = [
  { key: 'audit.retention.days', label: 'Retention (days)', kind: 'number', min: 1, step: 1, help: 'Absolute local cap; while tiering is on it waits for events to be tiered.' },
  { key: 'audit.read.enabled', label: 'Audit reads', kind: 'boolean', help: 'Record data:Select events.' },
  { key: 'audit.read.sample.rate', label: 'Read sample rate', kind: 'number', min: 0, max: 1, step: 0.01, help: 'Fraction of allowed reads kept (0.0–1.0); DENY is never sampled.' },
  { key: 'audit.tier.mode', label: 'Tier mode', kind: 'select', options: ['none', 'iceberg', 'parquet'], help: 'Where older history goes: an Iceberg table or Parquet files on S3.' },
  { key: 'audit.tier.iceberg.table', label: 'Iceberg table', kind: 'text', help: 'catalog.schema.table, e.g. local.ops.audit_events.' },
  { key: 'audit.tier.parquet.path', label: 'Parquet path', kind: 'text', help: 's3://bucket/prefix for Parquet mode.' },
  { key: 'audit.tier.connectionId', label: 'S3 connection', kind: 'text', help: 'The S3 connection Parquet mode writes through.' },
  { key: 'audit.tier.retain.local.days', label: 'Retain local (days)', kind: 'number', min: 0, step: 1, help: 'How long tiered events also stay local; 0 keeps only untiered ones.' },
] as const;

export type StorageField = (typeof STORAGE_FIELDS)[number];
export type StorageKey = StorageField['key'];
export type StorageValues = Record<StorageKey, string>;

/** The settings answer's values as the form's strings (the API answers numbers and booleans). */
export function formValues(settings: Record<string, unknown>): StorageValues {
  return Object.fromEntries(STORAGE_FIELDS.map((f) => [f.key, settings[f.key] === undefined || settings[f.key] === null ? '' : String(settings[f.key])])) as StorageValues;
}

/**
 * The keys whose value the form changed, typed as the API answers them (numbers as numbers,
 * booleans as booleans). A number field that is not a number is sent as typed, for the
 * server to refuse with its own message.
 */
export function changedSettings(before: StorageValues, after: StorageValues): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const field of STORAGE_FIELDS) {
    const value = after[field.key];
    if (value === before[field.key]) continue;
    if (field.kind === 'boolean') changes[field.key] = value === 'true';
    else if (field.kind === 'number' && value.trim() !== '' && Number.isFinite(Number(value))) changes[field.key] = Number(value);
    else changes[field.key] = value;
  }
  return changes;
}

/**
 * The field a settings 400 is about, to show the message beside it: the key it names, or for
 * "audit tier target … is not usable" the target field of the mode being saved (the
 * connection field when the message is about the connection).
 */
export function fieldOfError(message: string, mode: string): StorageKey | undefined {
  const named = STORAGE_FIELDS.filter((f) => message.startsWith(f.key + ' ') || message.startsWith(f.key + ':'));
  if (named.length > 0) return named.sort((a, b) => b.key.length - a.key.length)[0]?.key;
  if (/^audit tier target /.test(message)) {
    if (/connection '/.test(message)) return 'audit.tier.connectionId';
    return mode === 'parquet' ? 'audit.tier.parquet.path' : 'audit.tier.iceberg.table';
  }
  const mentioned = STORAGE_FIELDS.find((f) => message.includes(f.key));
  return mentioned?.key;
}
