import { AuditError, AuditErrorCode } from './audit-error.js';
import type { NodeConfig } from './config.js';
import { boolean, fraction, nonNegativeInt, ORPHAN_MIN_AGE_FLOOR_MS, orphanMinAge, parseNamed, positiveInt, text, type ValueParser } from './config-values.js';
import { redactKeyList } from './redaction.js';
import { jsonForMessage } from './json-for-message.js';
import { cronExpression, storedCronExpression } from './cron-expression.js';
import { checkS3Location, icebergTableProblem } from './tier-location.js';
import { tierMode, type TierMode } from './tier-mode.js';

/** The runtime settings keys (reference "Settings API"), in display order. */
export const SETTING_KEYS = [
  'audit.retention.days',
  'audit.read.enabled',
  'audit.read.sample.rate',
  'audit.tier.mode',
  'audit.tier.iceberg.table',
  'audit.tier.parquet.path',
  'audit.tier.connectionId',
  'audit.tier.retain.local.days',
  'audit.redact.keys',
  'audit.tier.maintenance.enabled',
  'audit.tier.maintenance.cron',
  'audit.tier.maintenance.snapshot.retain.last',
  'audit.tier.maintenance.remove.orphan.files',
  'audit.tier.maintenance.orphan.min.age.ms',
  'audit.tier.maintenance.target.file.size.bytes',
  'audit.tier.maintenance.metadata.previous.versions.max',
] as const;

export type SettingKey = (typeof SETTING_KEYS)[number];

/** Settings as stored (replicated metadata): every key, every value a string. */
export type Settings = Record<SettingKey, string>;

/** A setting as the API answers it: numbers and booleans as JSON numbers and booleans. */
export type SettingValue = string | number | boolean;
export type SettingsView = Record<SettingKey, SettingValue>;

/**
 * Keys a settings answer carries besides the settings (`warning`: a POST on a cluster leader whose change no standby confirmed). A POST ignores them,
 * so a GET answer can be edited and posted back as it is.
 */
export const SETTINGS_READ_ONLY_KEYS: readonly string[] = ['tierStatus', 'stale', 'warning'];

/** Settings parsed into the types the node acts on. */
export interface EffectiveSettings {
  retentionDays: number;
  readEnabled: boolean;
  readSampleRate: number;
  tierMode: TierMode;
  tierIcebergTable: string;
  tierParquetPath: string;
  tierConnectionId: string;
  tierRetainLocalDays: number;
  /** Key names whose values in `query` and `details` are masked at ingest. */
  redactKeys: string[];
  maintenanceEnabled: boolean;
  maintenanceCron: string;
  maintenanceSnapshotRetainLast: number;
  maintenanceRemoveOrphanFiles: boolean;
  maintenanceOrphanMinAgeMs: number;
  maintenanceTargetFileSizeBytes: number;
  maintenanceMetadataPreviousVersionsMax: number;
}

const PARSERS: { [K in SettingKey]: ValueParser<unknown> } = {
  'audit.retention.days': positiveInt,
  'audit.read.enabled': boolean,
  'audit.read.sample.rate': fraction,
  'audit.tier.mode': tierMode,
  'audit.tier.iceberg.table': text,
  'audit.tier.parquet.path': text,
  'audit.tier.connectionId': text,
  'audit.tier.retain.local.days': nonNegativeInt,
  'audit.redact.keys': redactKeyList,
  'audit.tier.maintenance.enabled': boolean,
  'audit.tier.maintenance.cron': cronExpression,
  'audit.tier.maintenance.snapshot.retain.last': positiveInt,
  'audit.tier.maintenance.remove.orphan.files': boolean,
  'audit.tier.maintenance.orphan.min.age.ms': orphanMinAge,
  'audit.tier.maintenance.target.file.size.bytes': positiveInt,
  'audit.tier.maintenance.metadata.previous.versions.max': positiveInt,
};

/**
 * How a stored value is read where it may come from an older version (parseSettings, the API's
 * view): as PARSERS, except where today's check is stricter than an older version's and the
 * value still means something. A cron an older version accepted loads as far as its form
 * (storedCronExpression); an orphan age below today's floor loads as the floor.
 */
const STORED_PARSERS: { [K in SettingKey]: ValueParser<unknown> } = {
  ...PARSERS,
  'audit.tier.maintenance.cron': storedCronExpression,
  'audit.tier.maintenance.orphan.min.age.ms': (v) => Math.max(ORPHAN_MIN_AGE_FLOOR_MS, nonNegativeInt(v)),
};

/** The one string form of a valid value (`1.0` → `1`, `TRUE` → `true`), so equal values compare equal. */
function canonical(key: SettingKey, text: string): string {
  const parsed = parseNamed(key, text, PARSERS[key], AuditErrorCode.SETTINGS_INVALID);
  return typeof parsed === 'string' ? parsed : String(parsed);
}

/** Stored values in their canonical form; one that no longer parses is left as it is (parseSettings reports it). */
function canonicalSettings(settings: Settings): Settings {
  const out = { ...settings };
  for (const key of SETTING_KEYS) {
    try {
      out[key] = canonical(key, settings[key]);
    } catch {
      // kept as stored
    }
  }
  return out;
}

/** The settings as the API answers them: each value typed as its key's parser reads it. */
export function settingsView(settings: Settings): SettingsView {
  const view = {} as SettingsView;
  for (const key of SETTING_KEYS) {
    try {
      // As the node reads it: a value an older version stored below today's bounds shows what is in force.
      const parsed = STORED_PARSERS[key](settings[key].trim());
      // A list (audit.redact.keys) is answered in its one string form, as it is configured.
      view[key] = (Array.isArray(parsed) ? parsed.join(',') : parsed) as SettingValue;
    } catch {
      view[key] = settings[key];
    }
  }
  return view;
}

/** Whether `key` is a runtime setting's key. */
export function isSettingKey(key: string): key is SettingKey {
  return (SETTING_KEYS as readonly string[]).includes(key);
}

/** The settings a node starts with: the `auditlake.*` configuration defaults. */
export function defaultSettings(config: NodeConfig): Settings {
  return {
    'audit.retention.days': String(config.retentionDays),
    'audit.read.enabled': String(config.readEnabled),
    'audit.read.sample.rate': String(config.readSampleRate),
    'audit.tier.mode': config.tierMode,
    'audit.tier.iceberg.table': config.tierIcebergTable,
    'audit.tier.parquet.path': config.tierParquetPath,
    'audit.tier.connectionId': config.tierConnectionId,
    'audit.tier.retain.local.days': String(config.tierRetainLocalDays),
    'audit.redact.keys': config.redactKeys.join(','),
    'audit.tier.maintenance.enabled': String(config.maintenanceEnabled),
    'audit.tier.maintenance.cron': config.maintenanceCron,
    'audit.tier.maintenance.snapshot.retain.last': String(config.maintenanceSnapshotRetainLast),
    'audit.tier.maintenance.remove.orphan.files': String(config.maintenanceRemoveOrphanFiles),
    'audit.tier.maintenance.orphan.min.age.ms': String(config.maintenanceOrphanMinAgeMs),
    'audit.tier.maintenance.target.file.size.bytes': String(config.maintenanceTargetFileSizeBytes),
    'audit.tier.maintenance.metadata.previous.versions.max': String(config.maintenanceMetadataPreviousVersionsMax),
  };
}

/** `catalog.schema.table` with three identifier parts (see tier-location.ts). */
export function isIcebergTableName(name: string): boolean {
  return icebergTableProblem(name) === undefined;
}

function invalid(message: string): AuditError {
  return new AuditError(AuditErrorCode.SETTINGS_INVALID, message);
}

/**
 * Parses a complete settings record; every key is checked, so a stored record is always usable
 * (the cron only as far as its form: see storedCronExpression).
 */
export function parseSettings(settings: Settings): EffectiveSettings {
  const get = <T>(key: SettingKey) => parseNamed(key, settings[key], STORED_PARSERS[key], AuditErrorCode.SETTINGS_INVALID) as T;
  const effective: EffectiveSettings = {
    retentionDays: get('audit.retention.days'),
    readEnabled: get('audit.read.enabled'),
    readSampleRate: get('audit.read.sample.rate'),
    tierMode: get('audit.tier.mode'),
    tierIcebergTable: get('audit.tier.iceberg.table'),
    tierParquetPath: get('audit.tier.parquet.path'),
    tierConnectionId: get('audit.tier.connectionId'),
    tierRetainLocalDays: get('audit.tier.retain.local.days'),
    redactKeys: get('audit.redact.keys'),
    maintenanceEnabled: get('audit.tier.maintenance.enabled'),
    // A new cron is checked in full as the request is merged (mergeSettings); a stored one only
    // as far as its form, so one an older version accepted and that never runs still loads.
    maintenanceCron: get('audit.tier.maintenance.cron'),
    maintenanceSnapshotRetainLast: get('audit.tier.maintenance.snapshot.retain.last'),
    maintenanceRemoveOrphanFiles: get('audit.tier.maintenance.remove.orphan.files'),
    // A new value is checked against the floor as the request is merged (mergeSettings); one an
    // older version stored below it still loads, and counts as the floor.
    maintenanceOrphanMinAgeMs: get('audit.tier.maintenance.orphan.min.age.ms'),
    maintenanceTargetFileSizeBytes: get('audit.tier.maintenance.target.file.size.bytes'),
    maintenanceMetadataPreviousVersionsMax: get('audit.tier.maintenance.metadata.previous.versions.max'),
  };
  if (effective.tierMode === 'iceberg') {
    const table = effective.tierIcebergTable;
    if (table === '') throw invalid('audit.tier.iceberg.table is required when audit.tier.mode=iceberg');
    const problem = icebergTableProblem(table);
    if (problem !== undefined) {
      // Three parts but a bad name: the reference message, then which name and why.
      const why = table.split('.').length === 3 ? ` (${problem})` : '';
      throw invalid(`audit tier target ${table} is not usable: audit tier iceberg table must be catalog.schema.table: ${table}${why}`);
    }
  }
  if (effective.tierMode === 'parquet' && effective.tierParquetPath === '') {
    throw invalid('audit.tier.parquet.path is required when audit.tier.mode=parquet');
  }
  // A path is checked whatever the mode, so none that could escape its bucket is ever stored.
  if (effective.tierParquetPath !== '') {
    const check = checkS3Location(effective.tierParquetPath);
    if (!check.ok) throw invalid(`audit.tier.parquet.path must be s3://bucket/prefix: ${JSON.stringify(effective.tierParquetPath)}: ${check.problem}`);
  }
  if (effective.tierIcebergTable !== '' && effective.tierMode !== 'iceberg') {
    const problem = icebergTableProblem(effective.tierIcebergTable);
    if (problem !== undefined) throw invalid(`audit.tier.iceberg.table must be catalog.schema.table: ${JSON.stringify(effective.tierIcebergTable)}: ${problem}`);
  }
  return effective;
}

export interface SettingChange {
  key: SettingKey;
  from: string;
  to: string;
}

export interface SettingsUpdate {
  merged: Settings;
  effective: EffectiveSettings;
  /** Only the keys whose value actually changed. */
  changes: SettingChange[];
}

function asSettingString(key: string, value: unknown): string {
  if (typeof value === 'string') return value.trim();
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  // A list setting may also be sent as a JSON array of names.
  if (key === 'audit.redact.keys' && Array.isArray(value) && value.every((v) => typeof v === 'string')) {
    // Joined by commas, an entry holding one would be taken as two keys.
    const split = value.find((v) => v.includes(','));
    if (split !== undefined) throw invalid(`${key} entry ${jsonForMessage(split)} holds a comma, which separates keys: give each key as an entry of its own`);
    // [""] joined is "", which turns masking off: only [] says that.
    if (value.some((v) => v.trim() === '')) throw invalid(`${key} has an empty entry: give key names, or [] to turn masking off`);
    return value.join(',');
  }
  throw invalid(`${key} must be a string, number or boolean (or null to unset a saved value): ${jsonForMessage(value)}`);
}

/**
 * Merges a settings request over what is stored and validates the result as a whole, so a
 * request changing only `audit.tier.mode` is checked against the stored table. Values are kept
 * in one canonical form, so posting back what GET answered (numbers, booleans, tierStatus and
 * all) changes nothing. Throws on the first problem; the caller persists nothing then.
 */
export function mergeSettings(stored: Settings, request: unknown): SettingsUpdate {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) {
    throw invalid('settings request must be a JSON object of setting keys to values');
  }
  const base = canonicalSettings(stored);
  const inForce = settingsView(stored);
  const merged: Settings = { ...base };
  for (const [key, value] of Object.entries(request)) {
    if (SETTINGS_READ_ONLY_KEYS.includes(key)) continue;
    if (!isSettingKey(key)) throw invalid(`unknown setting: ${key} (known: ${SETTING_KEYS.join(', ')})`);
    const text = asSettingString(key, value);
    // The value in force, sent back as the API answered it, changes nothing: one an older
    // version stored (a cron today's check refuses) is kept, not refused.
    if (text.trim() === base[key].trim() || text.trim() === String(inForce[key])) continue;
    merged[key] = canonical(key, text);
  }
  const effective = parseSettings(merged);
  const changes = SETTING_KEYS.filter((key) => merged[key] !== base[key]).map((key) => ({
    key,
    from: base[key],
    to: merged[key],
  }));
  return { merged, effective, changes };
}

/**
 * The replicated-metadata name of the eventId of the `audit:UpdateSettings` record that set the
 * settings in force (whoever saved them).
 */
export const SETTINGS_RECORD_META = 'settingsRecord';

/**
 * The replicated-metadata name of the eventIds of the last SETTINGS_HISTORY_MAX settings records
 * whose changes were made on this log's line of leaders, oldest first: a record among them was
 * in force here (later ones may have changed its keys again).
 */
export const SETTINGS_HISTORY_META = 'settingsRecords';
export const SETTINGS_HISTORY_MAX = 1000;

/** The settings history after a change recorded by `eventId` (the last SETTINGS_HISTORY_MAX). */
export function settingsHistoryWith(history: readonly string[] | undefined, lastRecord: string | undefined, eventId: string): string[] {
  const before = history ?? (lastRecord === undefined ? [] : [lastRecord]);
  return [...before, eventId].slice(-SETTINGS_HISTORY_MAX);
}

/**
 * Whether the settings record `eventId`'s change was made on the line of leaders whose
 * metadata is given (its history names it; before histories were kept, it is the last record):
 * stored as it is then, else as audit:UpdateSettingsLost (lostSettingsRecord).
 */
export function settingsRecordInForce(meta: { history: readonly string[] | undefined; lastRecord: string | undefined }, eventId: string): boolean {
  return meta.history !== undefined ? meta.history.includes(eventId) : meta.lastRecord === eventId;
}

/** The action of the record a settings change is saved with. */
export const UPDATE_SETTINGS_ACTION = 'audit:UpdateSettings';
/**
 * The action a settings record is stored under again when the log it was written to diverged
 * (its leader lost its place before any standby held it): the change it states is in force on
 * no node, since the settings replicate with the leader's log and the next leader never had it.
 */
export const LOST_SETTINGS_ACTION = 'audit:UpdateSettingsLost';

/**
 * A settings record a leader receives from a log that diverged (its change made on a leader
 * that lost its place), as that leader stores it when the change was not made on its own line
 * of leaders (settingsRecordInForce): the same
 * eventId, time and principal, under LOST_SETTINGS_ACTION with details saying the change is not
 * in force, followed by the change it stated. Forwarded as it was, it would state a change the
 * log's settings do not hold. A retried forward finds the same history (it only grows), so it is a duplicate.
 */
export function lostSettingsRecord<E extends { action: string; details: string }>(record: E): E {
  return {
    ...record,
    action: LOST_SETTINGS_ACTION,
    details: `not in force: saved on a leader that lost its place before any standby held the change (if the change was answered before that, its answer warned so), so the settings in force are the next leader's; post the change again to make it. It was: ${record.details}`,
  };
}

/**
 * The `details` of an `audit:UpdateSettings` event: old → new per changed key, and for each key
 * in `unset` (a saved value removed, so the key follows the node's configuration again) that it
 * does, with the configured value when that is no change; then each key in `pinned` (a tier
 * target key that followed the configuration, stored at its value because the target is saved
 * whole) with that value.
 */
export function describeChanges(changes: readonly SettingChange[], unset: readonly SettingChange[] = [], pinned: readonly { key: SettingKey; value: string }[] = []): string {
  const unsetKeys = new Set(unset.map((c) => c.key));
  const changed = changes.map((c) => `${c.key}: ${shownValue(c.from)} → ${shownValue(c.to)}${unsetKeys.has(c.key) ? ' (unset: follows configuration)' : ''}`);
  const kept = unset.filter((u) => !changes.some((c) => c.key === u.key)).map((u) => `${u.key}: ${shownValue(u.to)} (unset: follows configuration)`);
  const saved = pinned.map((p) => `${p.key}: ${shownValue(p.value)} (saved with the tier target)`);
  return [...changed, ...kept, ...saved].join('; ');
}

/**
 * Characters a value must not carry as they are into a one-line description: line breaks and
 * other control characters (a value such as a connection id could otherwise end the log line
 * and start a forged one on a terminal), line and paragraph separators, and the bidi controls
 * that make text display as other text.
 */
const UNSHOWN_CHARACTER = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** A setting's value as a description shows it: `(empty)`, or the text with those characters as `\uXXXX`. */
function shownValue(value: string): string {
  if (value === '') return '(empty)';
  return value.replace(UNSHOWN_CHARACTER, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
