// Goal: the maintenance cron setting accepts the expressions the scheduler runs and refuses anything else (node-cron's impossible days of month too) with a message naming the key; a stored cron node-cron refuses still loads.
import { describe, expect, it } from 'vitest';
import { AuditErrorCode, defaultSettings, mergeSettings, parseSettings, resolveConfig } from '../src/index.js';

const stored = defaultSettings(resolveConfig());

describe('audit.tier.maintenance.cron', () => {
  for (const cron of ['0 * * * *', '*/15 * * * *', '0 3 * * sun', '0 0 1 jan,jul *', '30 2 * * 1-5', '0 */5 * * * *', '5,35 0-23/2 * * *']) {
    it(`accepts ${cron}`, () => {
      expect(mergeSettings(stored, { 'audit.tier.maintenance.cron': cron }).effective.maintenanceCron).toBe(cron);
    });
  }
  for (const cron of ['', 'hourly', '* * * *', '60 * * * *', '0 24 * * *', '0 0 0 * *', '0 0 * 13 *', '0 0 * * 8', '*/0 * * * *', '5-1 * * * *', '1 2 3 4 5 6 7']) {
    it(`refuses ${JSON.stringify(cron)} naming the key`, () => {
      expect(() => mergeSettings(stored, { 'audit.tier.maintenance.cron': cron })).toThrow(
        expect.objectContaining({ code: AuditErrorCode.SETTINGS_INVALID, message: expect.stringMatching(/^audit\.tier\.maintenance\.cron must be a cron expression/) }),
      );
    });
  }
  // node-cron refuses these at schedule time ("31 2 is an impossible day of month").
  for (const cron of ['0 0 31 2 *', '0 0 30 2 *', '0 0 31 4 *', '0 0 31 4,6,9,11 *', '0 0 30-31 feb *', '0 0 0 31 apr *', '0 0 31 2 mon']) {
    it(`refuses ${JSON.stringify(cron)}, a day of month that never occurs, naming the key and the value`, () => {
      expect(() => mergeSettings(stored, { 'audit.tier.maintenance.cron': cron })).toThrow(
        expect.objectContaining({
          code: AuditErrorCode.SETTINGS_INVALID,
          message: expect.stringMatching(new RegExp(`^audit\\.tier\\.maintenance\\.cron must be a cron expression whose day of month occurs in its months .*: ${cron.replace(/\*/g, '\\*')}$`)),
        }),
      );
    });
  }
  for (const cron of ['0 0 29 2 *', '0 0 31 2,3 *', '0 0 30 4 *', '0 0 31 * *', '0 0 1-31 2 *', '0 0 */10 2 *', '0 0 31 jan-apr *']) {
    it(`accepts ${cron}, a day of month that occurs`, () => {
      expect(mergeSettings(stored, { 'audit.tier.maintenance.cron': cron }).effective.maintenanceCron).toBe(cron);
    });
  }
  it('loads a stored cron node-cron refuses (written by an older version), and refuses it only when posted anew', () => {
    const older = { ...stored, 'audit.tier.maintenance.cron': '0 0 31 2 *' };
    expect(parseSettings(older).maintenanceCron).toBe('0 0 31 2 *');
    expect(mergeSettings(older, { 'audit.tier.maintenance.cron': '0 3 * * *' }).effective.maintenanceCron).toBe('0 3 * * *');
    expect(() => resolveConfig(new Map([['auditlake.audit.tier.maintenance.cron', '0 0 31 2 *']]))).toThrow(/auditlake\.audit\.tier\.maintenance\.cron must be a cron expression whose day of month occurs in its months .*: 0 0 31 2 \*$/);
  });
  it('refuses a bad cron in configuration too', () => {
    expect(() => resolveConfig(new Map([['auditlake.audit.tier.maintenance.cron', 'every hour']]))).toThrow(/auditlake\.audit\.tier\.maintenance\.cron must be a cron expression/);
  });
});
