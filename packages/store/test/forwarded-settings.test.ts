// Goal: a settings record that comes back from a log that diverged is stored as the record of a
// change in force exactly when its change was made on the leader's line (the settings history
// names it, also when a later change followed), and as audit:UpdateSettingsLost otherwise;
// anything else passes unchanged. A real store holds the metadata.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeEvent, type AuditEvent } from '@auditlake/model';
import { AuditStore } from '../src/index.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { settingsRecordAsInForce } from '../src/forwarded-settings.js';

const record = (eventId: string): AuditEvent => ({ eventId, userId: 'admin', source: 'auditlake', action: 'audit:UpdateSettings', resource: 'audit.settings', decision: 'ALLOW', tables: [], query: '', details: 'audit.retention.days: 90 → 3', timestamp: 1_700_000_000_000 });

async function storeWithMeta(meta: Record<string, unknown>): Promise<AuditStore> {
  const dir = await mkdtemp(join(tmpdir(), 'settings-record-'));
  const store = await AuditStore.open({ location: dir });
  onTestFinished(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  await store.replaceMeta(meta);
  return store;
}

describe('settingsRecordAsInForce', () => {
  it('keeps a record the settings history names, also one a later change followed; marks any other lost', async () => {
    const store = await storeWithMeta({ settingsRecord: 'S2', settingsRecords: ['S0', 'S1', 'S2'] });
    expect(settingsRecordAsInForce(store, encodeEvent(record('S2'))).json).toBe(encodeEvent(record('S2')).json);
    // Superseded by S2, but made on this line of leaders: its record says so truly.
    expect(settingsRecordAsInForce(store, encodeEvent(record('S1'))).json).toBe(encodeEvent(record('S1')).json);
    const lost = JSON.parse(settingsRecordAsInForce(store, encodeEvent(record('X'))).json) as AuditEvent;
    expect(lost).toMatchObject({ eventId: 'X', action: 'audit:UpdateSettingsLost' });
    expect(lost.details).toMatch(/^not in force: .* It was: audit\.retention\.days: 90 → 3$/);
    // Anything but a settings record passes as it is.
    const other = encodeEvent({ ...record('E'), source: 'trino', action: 'audit:UpdateSettings' });
    expect(settingsRecordAsInForce(store, other)).toBe(other);
    // So does auditlake's record of a settings request it refused: it states no change.
    const refused = encodeEvent({ ...record('D'), userId: 'ingest', decision: 'DENY', details: 'HTTP 403: role ingest may not audit:UpdateSettings' });
    expect(settingsRecordAsInForce(store, refused)).toBe(refused);
  });

  it('without a history (metadata written before one was kept), keeps only the last record', async () => {
    const store = await storeWithMeta({ settingsRecord: 'S1' });
    expect(JSON.parse(settingsRecordAsInForce(store, encodeEvent(record('S1'))).json)).toMatchObject({ action: 'audit:UpdateSettings' });
    expect(JSON.parse(settingsRecordAsInForce(store, encodeEvent(record('S0'))).json)).toMatchObject({ action: 'audit:UpdateSettingsLost' });
  });
});
