// Goal: the maintenance cron setting accepts the expressions the scheduler runs and refuses anything else with a message naming the key.
import { describe, expect, it } from 'vitest';
import { AuditErrorCode, defaultSettings, mergeSettings, resolveConfig } from '../src/index.js';

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
  it('refuses a bad cron in configuration too', () => {
    expect(() => resolveConfig(new Map([['auditlake.audit.tier.maintenance.cron', 'every hour']]))).toThrow(/auditlake\.audit\.tier\.maintenance\.cron must be a cron expression/);
  });
});
