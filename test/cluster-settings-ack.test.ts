// Goal: a settings change on a cluster leader is answered once a standby holds it (the change
// and its audit record), and with no standby holding it the answer says so in `warning`: the
// change is in force on the leader only, and a failover before a standby pulls would run the
// settings from before it. Two real `auditlake start` processes, real redis-server.
import { describe, expect, it } from 'vitest';
import { ADMIN, startCluster, type Cluster } from './cluster-harness.js';

const ACK_TIMEOUT_MS = 1500;

function postSettings(url: string, settings: Record<string, unknown>): Promise<Response> {
  return fetch(`${url}/admin/audit/settings`, { method: 'POST', headers: { authorization: `Token ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify(settings) });
}

/** The redaction keys node `i` answers (its own when it leads). */
async function redactKeysOn(cluster: Cluster, i: number): Promise<unknown> {
  const res = await fetch(`${cluster.node(i).url}/admin/audit/settings`, { headers: { authorization: `Token ${ADMIN}` } });
  return ((await res.json()) as Record<string, unknown>)['audit.redact.keys'];
}

describe('settings changes on a cluster (2 real nodes, real redis-server)', () => {
  it('are answered once a standby holds them, and with a warning saying the change is on the leader only while none can', async () => {
    const cluster = await startCluster({ size: 2, sets: () => [`auditlake.ingest.ack.replicated.timeout.ms=${ACK_TIMEOUT_MS}`] });
    const leader = await cluster.waitForLeader();
    const standby = 1 - leader;

    // Standby up: answered once it holds the change, with no warning.
    const confirmed = await postSettings(cluster.node(leader).url, { 'audit.redact.keys': 'password,ssn' });
    expect(confirmed.status).toBe(200);
    const confirmedBody = (await confirmed.json()) as Record<string, unknown>;
    expect(confirmedBody['audit.redact.keys']).toBe('password,ssn');
    expect(confirmedBody).not.toHaveProperty('warning');

    // Standby down: saved and in force on the leader, answered after the wait with a warning.
    await cluster.node(standby).kill();
    const started = Date.now();
    const unconfirmed = await postSettings(cluster.node(leader).url, { 'audit.redact.keys': 'password,ssn,iban' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(ACK_TIMEOUT_MS - 100);
    expect(unconfirmed.status).toBe(200);
    const body = (await unconfirmed.json()) as Record<string, unknown>;
    expect(body['audit.redact.keys']).toBe('password,ssn,iban');
    expect(body['warning']).toBe(
      `the settings are saved and in force on this leader, but no standby confirmed them within ${ACK_TIMEOUT_MS} ms: should this leader fail before a standby holds them, the next leader runs the settings it held before (its audit:UpdateSettings record would come back into the log as audit:UpdateSettingsLost); post the same settings again to wait for a standby's confirmation`,
    );

    // The leader restarted, the standby still down: the same settings posted again are still not
    // confirmed (the record waited for is the stored settings', not one held in memory).
    await cluster.node(leader).kill();
    await cluster.start(leader);
    expect(await cluster.waitForLeader()).toBe(leader);
    const afterRestart = await postSettings(cluster.node(leader).url, { 'audit.redact.keys': 'password,ssn,iban' });
    expect(afterRestart.status).toBe(200);
    expect(((await afterRestart.json()) as Record<string, unknown>)['warning']).toMatch(/^the settings are saved and in force on this leader, but no standby (confirmed them|has been heard from)/);

    // Standby back: the same settings posted again wait for it and are answered without a warning.
    await cluster.start(standby);
    const warnedAgain = async () => {
      const again = await postSettings(cluster.node(leader).url, { 'audit.redact.keys': 'password,ssn,iban' });
      expect(again.status).toBe(200);
      return Object.hasOwn((await again.json()) as object, 'warning');
    };
    await expect.poll(warnedAgain, { timeout: 30_000, interval: 100 }).toBe(false);
    // Confirmed means a failover keeps it: the leader killed, the standby leads with the change in force.
    await cluster.node(leader).kill();
    expect(await cluster.waitForLeader()).toBe(standby);
    expect(await redactKeysOn(cluster, standby)).toBe('password,ssn,iban');
  });

  it('a change no standby got is undone on the leader that saved it once it rejoins, and its record comes back saying it was lost', async () => {
    const cluster = await startCluster({ size: 2, sets: () => [`auditlake.ingest.ack.replicated.timeout.ms=${ACK_TIMEOUT_MS}`] });
    const first = await cluster.waitForLeader();
    const second = 1 - first;
    await cluster.waitForLeaderKnownBy(second);
    const before = await redactKeysOn(cluster, first);

    // The standby frozen, the leader saves a change only it holds (answered with a warning), then dies.
    cluster.node(second).pause();
    // Past the long poll the standby had under way (1 s): its answer must not carry the change.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const saved = await postSettings(cluster.node(first).url, { 'audit.redact.keys': 'password,ssn' });
    expect(((await saved.json()) as Record<string, unknown>)['warning']).toMatch(/^the settings are saved and in force on this leader, but/);
    const record = (await cluster.log(first)).at(-1) as unknown as { eventId: string; action: string };
    expect(record.action).toBe('audit:UpdateSettings');
    await cluster.node(first).kill();
    cluster.node(second).resume();
    expect(await cluster.waitForLeader(20_000)).toBe(second);
    expect(await redactKeysOn(cluster, second)).toBe(before);

    // The dead leader restarts as a standby: its diverged log is cut, and its settings become
    // the leader's again (merged, they stayed: the lost change in force there).
    await cluster.start(first);
    const ownSettings = async () => {
      const res = await fetch(`${cluster.node(first).url}/admin/audit/settings`, { headers: { authorization: `Token ${ADMIN}`, 'x-auditlake-proxied': '1' } });
      return ((await res.json()) as Record<string, unknown>)['audit.redact.keys'];
    };
    await expect.poll(ownSettings, { timeout: 20_000, interval: 100 }).toBe(before);
    // The record is ordered again by the leader, saying the change is in force nowhere.
    const lost = async () => (await cluster.log(second)).find((e) => e.eventId === record.eventId) as unknown as { action: string; details: string } | undefined;
    await expect.poll(async () => (await lost())?.action, { timeout: 20_000, interval: 100 }).toBe('audit:UpdateSettingsLost');
    expect((await lost())!.details).toMatch(/^not in force: saved on a leader that lost its place before any standby held the change .* It was: audit\.redact\.keys: /);
    await expect.poll(async () => (await cluster.log(first)).length, { timeout: 20_000, interval: 100 }).toBe((await cluster.log(second)).length);

    // And should that node lead again, it runs the settings the cluster ran, not the lost change.
    await cluster.node(second).kill();
    expect(await cluster.waitForLeader(20_000)).toBe(first);
    expect(await redactKeysOn(cluster, first)).toBe(before);
  });
});
