/** One runtime setting as a form field: its key, label and help, and how it is edited. */
export type SettingField = { key: string; label: string; help: string } & (
  | { kind: 'boolean' }
  | { kind: 'text' }
  | { kind: 'select'; options: readonly string[] }
  | { kind: 'number'; min: number; step: number; max?: number }
);

/** The Storage & Retention fields: the runtime settings the Overview panel edits, in display order. */
export const STORAGE_FIELDS: readonly SettingField[] = [
  { key: 'audit.retention.days', label: 'Retention (days)', kind: 'number', min: 1, step: 1, help: 'Absolute local cap; while tiering is on it waits for events to be tiered.' },
  { key: 'audit.read.enabled', label: 'Audit reads', kind: 'boolean', help: 'Record data:Select events.' },
  { key: 'audit.read.sample.rate', label: 'Read sample rate', kind: 'number', min: 0, max: 1, step: 0.01, help: 'Fraction of allowed reads kept (0.0–1.0); DENY is never sampled.' },
  { key: 'audit.tier.mode', label: 'Tier mode', kind: 'select', options: ['none', 'iceberg', 'parquet'], help: 'Where older history goes: an Iceberg table or Parquet files on S3.' },
  { key: 'audit.tier.iceberg.table', label: 'Iceberg table', kind: 'text', help: 'catalog.schema.table, e.g. local.ops.audit_events.' },
  { key: 'audit.tier.parquet.path', label: 'Parquet path', kind: 'text', help: 's3://bucket/prefix for Parquet mode.' },
  { key: 'audit.tier.connectionId', label: 'S3 connection', kind: 'text', help: 'The S3 connection Parquet mode writes through.' },
  { key: 'audit.tier.retain.local.days', label: 'Retain local (days)', kind: 'number', min: 0, step: 1, help: 'How long tiered events also stay local; 0 keeps only untiered ones.' },
];

/** The table maintenance schedule and its retention rules, edited on the Maintenance page. */
export const MAINTENANCE_FIELDS: readonly SettingField[] = [
  { key: 'audit.tier.maintenance.enabled', label: 'Maintenance', kind: 'boolean', help: 'Run compaction, manifest rewrite, snapshot expiry and cleanup on the leader.' },
  { key: 'audit.tier.maintenance.cron', label: 'Schedule (cron)', kind: 'text', help: 'Five or six cron fields, e.g. 0 * * * * for every hour on the hour.' },
  { key: 'audit.tier.maintenance.snapshot.retain.last', label: 'Snapshots kept', kind: 'number', min: 1, step: 1, help: 'The newest snapshots kept by expiry; the current one always stays. Between runs a sweep expires back to this once twice as many have gathered.' },
  { key: 'audit.tier.maintenance.remove.orphan.files', label: 'Remove orphan files', kind: 'boolean', help: 'Delete files no snapshot references once they are old enough.' },
  { key: 'audit.tier.maintenance.orphan.min.age.ms', label: 'Orphan minimum age (ms)', kind: 'number', min: 3600000, step: 1, help: 'Younger files are never touched: a writer may still be committing them. At least 3600000 (1 hour).' },
  { key: 'audit.tier.maintenance.target.file.size.bytes', label: 'Target file size (bytes)', kind: 'number', min: 1, step: 1, help: 'Compaction rewrites small files into files near this size.' },
  { key: 'audit.tier.maintenance.metadata.previous.versions.max', label: 'Metadata versions kept', kind: 'number', min: 1, step: 1, help: 'Earlier metadata.json versions kept; older ones are deleted.' },
];

/** A form's values by setting key, as strings (what inputs hold). */
export type SettingValues = Record<string, string>;

/** The settings answer's values as the form's strings (the API answers numbers and booleans). */
export function formValues(fields: readonly SettingField[], settings: Record<string, unknown>): SettingValues {
  return Object.fromEntries(fields.map((f) => [f.key, settings[f.key] === undefined || settings[f.key] === null ? '' : String(settings[f.key])]));
}

/**
 * The keys whose value the form changed, typed as the API answers them (numbers as numbers,
 * booleans as booleans). A number field that is not a number is sent as typed, for the
 * server to refuse with its own message.
 */
export function changedSettings(fields: readonly SettingField[], before: SettingValues, after: SettingValues): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const field of fields) {
    const value = after[field.key] ?? '';
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
export function fieldOfError(fields: readonly SettingField[], message: string, mode: string): string | undefined {
  const named = fields.filter((f) => message.startsWith(f.key + ' ') || message.startsWith(f.key + ':'));
  if (named.length > 0) return named.sort((a, b) => b.key.length - a.key.length)[0]?.key;
  if (/^audit tier target /.test(message)) {
    const target = /connection '/.test(message) ? 'audit.tier.connectionId' : mode === 'parquet' ? 'audit.tier.parquet.path' : 'audit.tier.iceberg.table';
    // Only a field this form shows can hold the message; else it goes below the form.
    return fields.some((f) => f.key === target) ? target : undefined;
  }
  return fields.find((f) => message.includes(f.key))?.key;
}
