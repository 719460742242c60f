// Goal: the maintenance registrations hold exactly one cron timer per table, whatever the order of settings saves and shutdown: two refreshes at once after a cron change leave one timer (not one firing unseen beside the registered one), and a close() while a refresh reads the tiered locations leaves none running.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Connections } from '@auditlake/lake';
import { defaultSettings, parseSettings, resolveConfig, type EffectiveSettings } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { MaintenanceScheduler } from '../src/index.js';
import { SteppedClock } from './stepped-cron-clock.js';

const TABLE = 'cat.ns.registered_events';
const catalogs = new Map([['cat', { name: 'cat', warehouse: 's3://registration/warehouse', connectionId: 's3' }]]);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'maintenance-registration-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function settingsWithCron(expression: string): EffectiveSettings {
  return parseSettings({
    ...defaultSettings(resolveConfig()),
    'audit.tier.mode': 'iceberg',
    'audit.tier.iceberg.table': TABLE,
    'audit.tier.connectionId': 's3',
    'audit.tier.maintenance.cron': expression,
  });
}

/** The cron clock of the scheduler under test: each live cron timer holds one pending timer on it. */
let cronClock: SteppedClock;

/** The cron timers running (a stopped one leaves no pending timer). */
function liveTasks(): number {
  return cronClock.pending.size;
}

async function schedulerWith(settings: () => EffectiveSettings): Promise<MaintenanceScheduler> {
  cronClock = new SteppedClock(Date.now());
  const store = await AuditStore.open({ location: await mkdtemp(join(dir, 'store-')) });
  onTestFinished(() => store.close());
  const scheduler = new MaintenanceScheduler({
    store,
    connections: new S3Connections(new Map()),
    catalogs,
    settings,
    isLeader: () => false,
    term: () => 1,
    log: { info: () => undefined, warn: () => undefined },
    cronClock,
  });
  onTestFinished(() => scheduler.close());
  return scheduler;
}

describe('maintenance registrations', () => {
  it('two refreshes at once after a cron change leave one task for the table, and close() leaves none', async () => {
    let current = settingsWithCron('0 0 1 1 *');
    const scheduler = await schedulerWith(() => current);
    await scheduler.refresh();
    expect(liveTasks()).toBe(1);
    current = settingsWithCron('0 0 2 1 *');
    await Promise.all([scheduler.refresh(), scheduler.refresh()]);
    expect(scheduler.registrations().map((r) => [r.table, r.cron])).toEqual([[TABLE, '0 0 2 1 *']]);
    expect(liveTasks()).toBe(1);
    await scheduler.close();
    expect(liveTasks()).toBe(0);
  });

  it('a close() while a refresh reads the tiered locations leaves no task running', async () => {
    let closing: Promise<void> | undefined;
    // The refresh asks for the settings, then reads the store: close right there, mid-refresh
    // (the scheduler exists by then: settings are first asked for by the refresh below).
    const scheduler: MaintenanceScheduler = await schedulerWith(() => {
      closing ??= scheduler.close();
      return settingsWithCron('0 0 1 1 *');
    });
    await scheduler.refresh();
    await closing;
    expect(closing).toBeDefined();
    expect(scheduler.registrations()).toEqual([]);
    expect(liveTasks()).toBe(0);
  });
});
