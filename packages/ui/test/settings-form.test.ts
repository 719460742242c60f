// Goal: a settings form (Storage & Retention, the maintenance schedule) sends only what changed, typed as the API answers, and puts a 400 beside the field it is about.
import { describe, expect, it } from 'vitest';
import { changedSettings, fieldOfError, formValues, MAINTENANCE_FIELDS, STORAGE_FIELDS } from '../src/settings-form.js';

describe('settings form', () => {
  const settings = { 'audit.retention.days': 90, 'audit.read.enabled': true, 'audit.read.sample.rate': 1, 'audit.tier.mode': 'none', 'audit.tier.iceberg.table': 'local.ops.audit_events', 'audit.tier.parquet.path': '', 'audit.tier.connectionId': '', 'audit.tier.retain.local.days': 7, tierStatus: {} };

  it('reads numbers and booleans (or strings) into the form', () => {
    const values = formValues(STORAGE_FIELDS, settings);
    expect(values['audit.retention.days']).toBe('90');
    expect(values['audit.read.enabled']).toBe('true');
    expect(formValues(STORAGE_FIELDS, { ...settings, 'audit.retention.days': '30' })['audit.retention.days']).toBe('30');
  });

  it('sends only changed keys, numbers as numbers and booleans as booleans', () => {
    const before = formValues(STORAGE_FIELDS, settings);
    expect(changedSettings(STORAGE_FIELDS, before, before)).toEqual({});
    expect(changedSettings(STORAGE_FIELDS, before, { ...before, 'audit.retention.days': '30', 'audit.read.enabled': 'false', 'audit.tier.mode': 'iceberg' })).toEqual({ 'audit.retention.days': 30, 'audit.read.enabled': false, 'audit.tier.mode': 'iceberg' });
    // Not a number: sent as typed, so the server's own message explains it.
    expect(changedSettings(STORAGE_FIELDS, before, { ...before, 'audit.retention.days': 'ten' })).toEqual({ 'audit.retention.days': 'ten' });
  });

  it('finds the field a refusal is about', () => {
    expect(fieldOfError(STORAGE_FIELDS, 'audit.tier.mode must be one of none, iceberg, parquet: icebreg', 'icebreg')).toBe('audit.tier.mode');
    expect(fieldOfError(STORAGE_FIELDS, 'audit.tier.iceberg.table is required when audit.tier.mode=iceberg', 'iceberg')).toBe('audit.tier.iceberg.table');
    expect(fieldOfError(STORAGE_FIELDS, "audit tier target nosuchcat.x.audit_events is not usable: No catalog config for audit tier catalog 'nosuchcat'", 'iceberg')).toBe('audit.tier.iceberg.table');
    expect(fieldOfError(STORAGE_FIELDS, 'audit tier target s3://ext/audit is not usable: bucket ext cannot be reached', 'parquet')).toBe('audit.tier.parquet.path');
    expect(fieldOfError(STORAGE_FIELDS, "audit tier target s3://ext/audit is not usable: No S3 connection config for audit tier connection 'nosuch'", 'parquet')).toBe('audit.tier.connectionId');
    expect(fieldOfError(STORAGE_FIELDS, 'audit.retention.days must be a positive integer: 0', 'none')).toBe('audit.retention.days');
    expect(fieldOfError(STORAGE_FIELDS, 'no leader is reachable', 'none')).toBeUndefined();
  });

  it('puts a refusal only beside a field of its own form', () => {
    expect(fieldOfError(MAINTENANCE_FIELDS, "audit.tier.maintenance.cron is not a valid cron expression: 'every hour'", 'iceberg')).toBe('audit.tier.maintenance.cron');
    expect(fieldOfError(MAINTENANCE_FIELDS, 'audit.tier.maintenance.snapshot.retain.last must be a positive integer: 0', 'iceberg')).toBe('audit.tier.maintenance.snapshot.retain.last');
    // A tier-target refusal is about a Storage field: on the maintenance form it goes below the form.
    expect(fieldOfError(MAINTENANCE_FIELDS, 'audit tier target s3://ext/audit is not usable: bucket ext cannot be reached', 'parquet')).toBeUndefined();
    const before = formValues(MAINTENANCE_FIELDS, { 'audit.tier.maintenance.enabled': true, 'audit.tier.maintenance.cron': '0 * * * *', 'audit.tier.maintenance.snapshot.retain.last': 24 });
    expect(changedSettings(MAINTENANCE_FIELDS, before, { ...before, 'audit.tier.maintenance.enabled': 'false', 'audit.tier.maintenance.cron': '*/5 * * * *' })).toEqual({ 'audit.tier.maintenance.enabled': false, 'audit.tier.maintenance.cron': '*/5 * * * *' });
  });
});
