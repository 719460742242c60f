// Goal: runtime settings default from config, merge over what is stored, and are refused with the reference's messages.
import { describe, expect, it } from 'vitest';
import { AuditError, AuditErrorCode } from '../src/audit-error.js';
import { resolveConfig } from '../src/config.js';
import { DEFAULT_REDACT_KEYS } from '../src/redaction.js';
import { defaultSettings, describeChanges, mergeSettings, parseSettings, settingsView, SETTING_KEYS, type Settings } from '../src/settings.js';

function refusal(fn: () => unknown): AuditError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AuditError);
    return err as AuditError;
  }
  throw new Error('expected an AuditError, but the call succeeded');
}

function refusedMessage(stored: Settings, request: unknown): string {
  const err = refusal(() => mergeSettings(stored, request));
  expect(err.code).toBe(AuditErrorCode.SETTINGS_INVALID);
  return err.message;
}

const DEFAULTS = (): Settings => defaultSettings(resolveConfig());

describe('defaultSettings', () => {
  it('has every runtime key, with the reference defaults', () => {
    const d = DEFAULTS();
    expect(Object.keys(d).sort()).toEqual([...SETTING_KEYS].sort());
    expect(d).toMatchObject({
      'audit.retention.days': '90',
      'audit.read.enabled': 'true',
      'audit.tier.mode': 'none',
      'audit.tier.iceberg.table': 'ice.ops.audit_events',
      'audit.tier.parquet.path': '',
      'audit.tier.connectionId': '',
      'audit.tier.retain.local.days': '7',
      'audit.redact.keys': DEFAULT_REDACT_KEYS.join(','),
      'audit.tier.maintenance.enabled': 'true',
      'audit.tier.maintenance.cron': '0 * * * *',
      'audit.tier.maintenance.snapshot.retain.last': '24',
      'audit.tier.maintenance.remove.orphan.files': 'true',
      'audit.tier.maintenance.orphan.min.age.ms': '259200000',
      'audit.tier.maintenance.target.file.size.bytes': '16777216',
      'audit.tier.maintenance.metadata.previous.versions.max': '100',
    });
    expect(Number(d['audit.read.sample.rate'])).toBe(1);
    expect(parseSettings(d)).toEqual({
      retentionDays: 90,
      readEnabled: true,
      readSampleRate: 1,
      tierMode: 'none',
      tierIcebergTable: 'ice.ops.audit_events',
      tierParquetPath: '',
      tierConnectionId: '',
      tierRetainLocalDays: 7,
      redactKeys: [...DEFAULT_REDACT_KEYS],
      maintenanceEnabled: true,
      maintenanceCron: '0 * * * *',
      maintenanceSnapshotRetainLast: 24,
      maintenanceRemoveOrphanFiles: true,
      maintenanceOrphanMinAgeMs: 259_200_000,
      maintenanceTargetFileSizeBytes: 16_777_216,
      maintenanceMetadataPreviousVersionsMax: 100,
    });
  });

  it('takes its values from the configuration', () => {
    const config = resolveConfig(
      new Map([
        ['auditlake.audit.retention.days', '30'],
        ['auditlake.audit.read.enabled', 'false'],
        ['auditlake.audit.read.sample.rate', '0.25'],
        ['auditlake.audit.tier.mode', 'parquet'],
        ['auditlake.audit.tier.parquet.path', 's3://bucket/audit'],
        ['auditlake.audit.tier.connectionId', 'local'],
        ['auditlake.audit.tier.retain.local.days', '0'],
        ['auditlake.audit.redact.keys', 'password,jdbc.pass'],
        ['auditlake.audit.tier.maintenance.cron', '*/5 * * * *'],
        ['auditlake.audit.tier.maintenance.snapshot.retain.last', '3'],
      ]),
    );
    expect(defaultSettings(config)).toMatchObject({
      'audit.retention.days': '30',
      'audit.read.enabled': 'false',
      'audit.read.sample.rate': '0.25',
      'audit.tier.mode': 'parquet',
      'audit.tier.iceberg.table': 'ice.ops.audit_events',
      'audit.tier.parquet.path': 's3://bucket/audit',
      'audit.tier.connectionId': 'local',
      'audit.tier.retain.local.days': '0',
      'audit.redact.keys': 'password,jdbc.pass',
      'audit.tier.maintenance.cron': '*/5 * * * *',
      'audit.tier.maintenance.snapshot.retain.last': '3',
    });
  });
});

describe('mergeSettings', () => {
  it('merges a partial request over what is stored and lists only changed keys', () => {
    const stored = { ...DEFAULTS(), 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'ice.ops.audit_events' };
    const update = mergeSettings(stored, { 'audit.tier.iceberg.table': 'ice.sec.audit', 'audit.retention.days': '90' });
    expect(update.merged).toEqual({ ...stored, 'audit.tier.iceberg.table': 'ice.sec.audit' });
    expect(update.effective.tierMode).toBe('iceberg');
    expect(update.effective.tierIcebergTable).toBe('ice.sec.audit');
    expect(update.changes).toEqual([{ key: 'audit.tier.iceberg.table', from: 'ice.ops.audit_events', to: 'ice.sec.audit' }]);
  });

  it('validates a request changing only the mode against the stored table', () => {
    const update = mergeSettings(DEFAULTS(), { 'audit.tier.mode': 'iceberg' });
    expect(update.effective).toMatchObject({ tierMode: 'iceberg', tierIcebergTable: 'ice.ops.audit_events' });
    expect(update.changes).toEqual([{ key: 'audit.tier.mode', from: 'none', to: 'iceberg' }]);
  });

  it('accepts JSON numbers and booleans as values and stores them as strings', () => {
    const update = mergeSettings(DEFAULTS(), { 'audit.retention.days': 30, 'audit.read.enabled': false, 'audit.read.sample.rate': 0.5 });
    expect(update.merged).toMatchObject({ 'audit.retention.days': '30', 'audit.read.enabled': 'false', 'audit.read.sample.rate': '0.5' });
    expect(update.effective).toMatchObject({ retentionDays: 30, readEnabled: false, readSampleRate: 0.5 });
    expect(update.changes.map((c) => c.key)).toEqual(['audit.retention.days', 'audit.read.enabled', 'audit.read.sample.rate']);
  });

  it('reports no changes when every value is the same (after trimming)', () => {
    const stored = DEFAULTS();
    expect(mergeSettings(stored, {}).changes).toEqual([]);
    expect(mergeSettings(stored, { 'audit.retention.days': ' 90 ', 'audit.tier.mode': 'none' }).changes).toEqual([]);
  });

  it('accepts the boundary values 0 and 1 for the sample rate and 0 retain-local days', () => {
    expect(mergeSettings(DEFAULTS(), { 'audit.read.sample.rate': '0' }).effective.readSampleRate).toBe(0);
    expect(mergeSettings(DEFAULTS(), { 'audit.read.sample.rate': '1' }).effective.readSampleRate).toBe(1);
    expect(mergeSettings(DEFAULTS(), { 'audit.tier.retain.local.days': '0' }).effective.tierRetainLocalDays).toBe(0);
  });

  it.each([
    ['audit.retention.days', '0'],
    ['audit.retention.days', '-1'],
    ['audit.retention.days', 'abc'],
    ['audit.retention.days', '1.5'],
    ['audit.retention.days', ''],
    ['audit.read.enabled', 'yes'],
    ['audit.read.enabled', '1'],
    ['audit.read.sample.rate', '1.5'],
    ['audit.read.sample.rate', '-0.1'],
    ['audit.read.sample.rate', 'x'],
    ['audit.tier.retain.local.days', '-1'],
    ['audit.tier.retain.local.days', '2.5'],
  ])('refuses %s=%j, naming key and value', (key, value) => {
    const stored = DEFAULTS();
    const before = structuredClone(stored);
    const message = refusedMessage(stored, { [key]: value });
    expect(message.startsWith(`${key} `)).toBe(true);
    expect(message.endsWith(`: ${value}`)).toBe(true);
    expect(stored).toEqual(before);
  });

  it.each([
    ['audit.retention.days', 0],
    ['audit.retention.days', 1.5],
    ['audit.read.sample.rate', 1.5],
    ['audit.read.sample.rate', -0.1],
  ])('refuses JSON number %s=%j, naming key and value', (key, value) => {
    const message = refusedMessage(DEFAULTS(), { [key]: value });
    expect(message).toContain(key);
    expect(message).toContain(String(value));
  });

  it.each([[null], [[1]], [{ days: 1 }]])('refuses a value that is not a string, number or boolean (%j)', (value) => {
    expect(refusedMessage(DEFAULTS(), { 'audit.retention.days': value })).toContain('audit.retention.days');
  });

  it('takes audit.redact.keys as a comma-separated list; an empty list turns masking off', () => {
    const update = mergeSettings(DEFAULTS(), { 'audit.redact.keys': ' password, s3.secret-key ' });
    expect(update.merged['audit.redact.keys']).toBe('password,s3.secret-key');
    expect(settingsView(update.merged)['audit.redact.keys']).toBe('password,s3.secret-key');
    expect(mergeSettings(update.merged, { 'audit.redact.keys': ['password', 's3.secret-key'] }).changes).toEqual([]);
    expect(update.effective.redactKeys).toEqual(['password', 's3.secret-key']);
    expect(update.changes.map((c) => c.key)).toEqual(['audit.redact.keys']);
    expect(mergeSettings(DEFAULTS(), { 'audit.redact.keys': '' }).effective.redactKeys).toEqual([]);
    // An array entry holding a comma would be split into two keys: refused, naming it.
    expect(() => mergeSettings(DEFAULTS(), { 'audit.redact.keys': ['password', 'a,b'] })).toThrow('audit.redact.keys entry "a,b" holds a comma, which separates keys: give each key as an entry of its own');
    // [""] would join to "", masking off: only [] says that.
    for (const blank of [[''], ['  '], ['password', '']]) expect(() => mergeSettings(DEFAULTS(), { 'audit.redact.keys': blank })).toThrow('audit.redact.keys has an empty entry: give key names, or [] to turn masking off');
    expect(mergeSettings(DEFAULTS(), { 'audit.redact.keys': [] }).effective.redactKeys).toEqual([]);
  });

  it.each([
    ['password,,token', 'audit.redact.keys must be key names separated by commas, with no empty entry: password,,token'],
    ['pass word', 'audit.redact.keys must list key names made of letters, digits, \'.\', \'_\' and \'-\' (got "pass word"): pass word'],
    ['--', 'audit.redact.keys must list key names made of letters, digits, \'.\', \'_\' and \'-\' (got "--"): --'],
  ])('refuses audit.redact.keys=%j, naming the bad entry', (value, message) => {
    expect(refusedMessage(DEFAULTS(), { 'audit.redact.keys': value })).toBe(message);
  });

  it('refuses an unknown key, naming it', () => {
    expect(refusedMessage(DEFAULTS(), { 'audit.retention.dayz': '3' })).toContain('audit.retention.dayz');
  });

  it.each([[null], [[]], ['audit.tier.mode=none'], [5]])('refuses a request that is not a JSON object (%j)', (request) => {
    refusedMessage(DEFAULTS(), request);
  });

  it('refuses an unknown tier mode with the reference message', () => {
    expect(refusedMessage(DEFAULTS(), { 'audit.tier.mode': 'icebreg' })).toBe('audit.tier.mode must be one of none, iceberg, parquet: icebreg');
  });

  it('refuses iceberg mode without a table with the reference message', () => {
    expect(refusedMessage(DEFAULTS(), { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': '' })).toBe(
      'audit.tier.iceberg.table is required when audit.tier.mode=iceberg',
    );
    const stored = { ...DEFAULTS(), 'audit.tier.iceberg.table': '' };
    expect(refusedMessage(stored, { 'audit.tier.mode': 'iceberg' })).toBe('audit.tier.iceberg.table is required when audit.tier.mode=iceberg');
  });

  it('refuses parquet mode without a path with the reference message', () => {
    expect(refusedMessage(DEFAULTS(), { 'audit.tier.mode': 'parquet' })).toBe('audit.tier.parquet.path is required when audit.tier.mode=parquet');
    expect(refusedMessage(DEFAULTS(), { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': '   ' })).toBe(
      'audit.tier.parquet.path is required when audit.tier.mode=parquet',
    );
  });

  it('ignores the read-only keys of a GET answer, so it can be posted back as it is, changing nothing', () => {
    const stored = { ...DEFAULTS(), 'audit.read.sample.rate': '1.0', 'audit.read.enabled': 'TRUE' };
    const answer = { ...settingsView(stored), tierStatus: { mode: 'none' }, stale: true };
    expect(answer).toMatchObject({ 'audit.retention.days': 90, 'audit.read.enabled': true, 'audit.read.sample.rate': 1, 'audit.tier.mode': 'none' });
    expect(mergeSettings(stored, answer).changes).toEqual([]);
    // Equal values in another spelling are no change either.
    expect(mergeSettings(stored, { 'audit.read.sample.rate': 1, 'audit.retention.days': '090' }).changes).toEqual([]);
    expect(mergeSettings(stored, { 'audit.read.sample.rate': '0.50' }).changes).toEqual([{ key: 'audit.read.sample.rate', from: '1', to: '0.5' }]);
  });

  it('accepts parquet mode with a path', () => {
    const update = mergeSettings(DEFAULTS(), { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://bkt/audit', 'audit.tier.connectionId': 'local' });
    expect(update.effective).toMatchObject({ tierMode: 'parquet', tierParquetPath: 's3://bkt/audit', tierConnectionId: 'local' });
    expect(update.changes.map((c) => c.key)).toEqual(['audit.tier.mode', 'audit.tier.parquet.path', 'audit.tier.connectionId']);
  });

  it('refuses tier locations that could leave their bucket prefix, naming the problem, in any mode', () => {
    const refused = (request: Record<string, string>) => {
      try {
        mergeSettings(DEFAULTS(), request);
      } catch (err) {
        expect(err).toMatchObject({ code: AuditErrorCode.SETTINGS_INVALID });
        return (err as Error).message;
      }
      throw new Error(`accepted ${JSON.stringify(request)}`);
    };
    expect(refused({ 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://auditlake/../../../../tmp/x', 'audit.tier.connectionId': 'local' })).toBe(
      `audit.tier.parquet.path must be s3://bucket/prefix: "s3://auditlake/../../../../tmp/x": the key prefix has a '..' segment`,
    );
    // Saved for later while another mode is on: still checked.
    expect(refused({ 'audit.tier.parquet.path': 's3://auditlake/a//b' })).toBe(`audit.tier.parquet.path must be s3://bucket/prefix: "s3://auditlake/a//b": the key prefix has an empty segment (a doubled '/')`);
    expect(refused({ 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'local.a/b.c' })).toBe(
      "audit tier target local.a/b.c is not usable: audit tier iceberg table must be catalog.schema.table: local.a/b.c (the schema name 'a/b' may hold only letters, digits and '_', and must not start with a digit)",
    );
    expect(refused({ 'audit.tier.iceberg.table': 'local.ops.../x' })).toMatch(/^audit\.tier\.iceberg\.table must be catalog\.schema\.table: "local\.ops\.\.\.\/x": it must be catalog\.schema\.table/);
  });

  it('refuses an orphan minimum age below one hour, naming the key; one hour and more are accepted', () => {
    const floor = 'audit.tier.maintenance.orphan.min.age.ms must be at least 3600000 (1 hour; younger unreferenced files may belong to a commit still being written)';
    expect(refusedMessage(DEFAULTS(), { 'audit.tier.maintenance.orphan.min.age.ms': 0 })).toBe(`${floor}: 0`);
    expect(refusedMessage(DEFAULTS(), { 'audit.tier.maintenance.orphan.min.age.ms': '3599999' })).toBe(`${floor}: 3599999`);
    expect(mergeSettings(DEFAULTS(), { 'audit.tier.maintenance.orphan.min.age.ms': 3_600_000 }).effective.maintenanceOrphanMinAgeMs).toBe(3_600_000);
    expect(mergeSettings(DEFAULTS(), { 'audit.tier.maintenance.orphan.min.age.ms': 86_400_000 }).effective.maintenanceOrphanMinAgeMs).toBe(86_400_000);
  });
});

describe('values an older version stored that today\'s checks refuse', () => {
  it('are answered as they are in force, and the answer posted back as it is changes nothing and is not refused', () => {
    // An orphan age below today's floor and a cron that never runs, both once accepted.
    const older = { ...DEFAULTS(), 'audit.tier.maintenance.orphan.min.age.ms': '60000', 'audit.tier.maintenance.cron': '0 0 31 2 *' };
    const view = settingsView(older);
    expect(view['audit.tier.maintenance.orphan.min.age.ms']).toBe(3_600_000);
    expect(parseSettings(older).maintenanceOrphanMinAgeMs).toBe(3_600_000);
    expect(view['audit.tier.maintenance.cron']).toBe('0 0 31 2 *');
    const postedBack = mergeSettings(older, view);
    expect(postedBack.changes).toEqual([]);
    expect(postedBack.effective).toEqual(parseSettings(older));
    // Sent as stored, too; a new value below the floor is still refused.
    expect(mergeSettings(older, { 'audit.tier.maintenance.orphan.min.age.ms': '60000' }).changes).toEqual([]);
    expect(refusedMessage(older, { 'audit.tier.maintenance.orphan.min.age.ms': 120_000 })).toMatch(/must be at least 3600000 .*: 120000$/);
    expect(refusedMessage(older, { 'audit.tier.maintenance.cron': '0 0 30 2 *' })).toMatch(/day of month occurs/);
  });
});

describe('settingsView', () => {
  it('answers numbers as numbers, booleans as booleans and text as text', () => {
    expect(settingsView({ ...DEFAULTS(), 'audit.read.sample.rate': '0.25', 'audit.read.enabled': 'false', 'audit.tier.retain.local.days': '0' })).toEqual({
      'audit.retention.days': 90,
      'audit.read.enabled': false,
      'audit.read.sample.rate': 0.25,
      'audit.tier.mode': 'none',
      'audit.tier.iceberg.table': 'ice.ops.audit_events',
      'audit.tier.parquet.path': '',
      'audit.tier.connectionId': '',
      'audit.tier.retain.local.days': 0,
      'audit.redact.keys': DEFAULT_REDACT_KEYS.join(','),
      'audit.tier.maintenance.enabled': true,
      'audit.tier.maintenance.cron': '0 * * * *',
      'audit.tier.maintenance.snapshot.retain.last': 24,
      'audit.tier.maintenance.remove.orphan.files': true,
      'audit.tier.maintenance.orphan.min.age.ms': 259_200_000,
      'audit.tier.maintenance.target.file.size.bytes': 16_777_216,
      'audit.tier.maintenance.metadata.previous.versions.max': 100,
    });
  });
});

describe('parseSettings', () => {
  it('refuses a stored record with a bad value, naming key and value', () => {
    const err = refusal(() => parseSettings({ ...DEFAULTS(), 'audit.read.sample.rate': '2' }));
    expect(err.code).toBe(AuditErrorCode.SETTINGS_INVALID);
    expect(err.message).toBe('audit.read.sample.rate must be a number from 0.0 to 1.0: 2');
  });

  it('loads an orphan minimum age an older version stored below the floor, as the floor', () => {
    const stored = { ...DEFAULTS(), 'audit.tier.maintenance.orphan.min.age.ms': '0' };
    expect(parseSettings(stored).maintenanceOrphanMinAgeMs).toBe(3_600_000);
    // Saving another key over it still works; the stored value keeps counting as the floor.
    expect(mergeSettings(stored, { 'audit.read.enabled': false }).effective.maintenanceOrphanMinAgeMs).toBe(3_600_000);
  });
});

describe('describeChanges', () => {
  it('shows old → new per changed key, empty values spelled out', () => {
    expect(
      describeChanges([
        { key: 'audit.retention.days', from: '90', to: '30' },
        { key: 'audit.tier.parquet.path', from: '', to: 's3://b/p' },
        { key: 'audit.tier.connectionId', from: 'local', to: '' },
      ]),
    ).toBe('audit.retention.days: 90 → 30; audit.tier.parquet.path: (empty) → s3://b/p; audit.tier.connectionId: local → (empty)');
    expect(describeChanges([])).toBe('');
  });

  it('marks keys unset back to the configuration, with the value when the configuration gives the one they had', () => {
    const change = { key: 'audit.retention.days', from: '45', to: '30' } as const;
    const kept = { key: 'audit.tier.connectionId', from: 'b\n', to: 'b\n' } as const;
    expect(describeChanges([change], [change, kept])).toBe('audit.retention.days: 45 → 30 (unset: follows configuration); audit.tier.connectionId: b\\u000a (unset: follows configuration)');
  });

  it('shows line breaks, other control characters and bidi controls of a value escaped, so a description stays one honest line', () => {
    const forged = 'x\n[16:10:00.000] ERROR: integrity check FAILED';
    expect(describeChanges([{ key: 'audit.tier.connectionId', from: '', to: forged }])).toBe('audit.tier.connectionId: (empty) → x\\u000a[16:10:00.000] ERROR: integrity check FAILED');
    expect(describeChanges([{ key: 'audit.tier.connectionId', from: 'a\rb\u0007', to: 'nimda\u202e' }])).toBe('audit.tier.connectionId: a\\u000db\\u0007 → nimda\\u202e');
  });

  it('describes what mergeSettings reports', () => {
    const update = mergeSettings(DEFAULTS(), { 'audit.tier.retain.local.days': '3' });
    expect(describeChanges(update.changes)).toBe('audit.tier.retain.local.days: 7 → 3');
  });
});
