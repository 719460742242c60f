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
      `the settings are saved and in force on this leader, but no standby confirmed them within ${ACK_TIMEOUT_MS} ms: should this leader fail before a standby holds them, the next leader runs the settings it held before (the audit:UpdateSettings record may come back into the log without its change); post the same settings again to wait for a standby's confirmation`,
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
});
