// Goal: configured keys' values are masked at ingest, before anything is stored, inline and in parse workers alike, and the setting is validated and audited.
import { describe, expect, it } from 'vitest';
import { event, startTestNode, type TestNode } from './test-node.js';

async function setKeys(t: TestNode, keys: string) {
  const res = await t.request('/admin/audit/settings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ 'audit.redact.keys': keys }) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function storedBytes(t: TestNode): Promise<string> {
  // Everything the store holds, raw: the secret must be in none of it (log, indexes, outbox).
  const chunks: string[] = [];
  for await (const e of t.node.store.search({ action: 'all' })) chunks.push(JSON.stringify(e));
  return chunks.join('\n');
}

const SQL = "CREATE CATALOG lake WITH ('s3.access-key' = 'AKIAEXAMPLE', 's3.secret-key' = 'wJalrXUtnFEMI', 'region' = 'eu-1')";
const DETAILS = '{"customInfo":{"metalake":"acme","jdbc-password":"hunter2"},"status":"SUCCESS"}';

describe('redaction at ingest', () => {
  for (const threads of ['0', '1']) {
    it(`masks query and details before storage and counts what it masked (parse threads ${threads})`, async () => {
      const t = await startTestNode({ props: { 'auditlake.ingest.parse.threads': threads } });
      expect((await t.ingest([event({ eventId: 'masked', query: SQL, details: DETAILS }), event({ eventId: 'plain', query: 'SELECT 1', details: 'password reset page' })])).status).toBe(200);
      const [masked] = (await t.search('?q=lake')).json.events;
      expect(masked).toMatchObject({
        eventId: 'masked',
        query: "CREATE CATALOG lake WITH ('s3.access-key' = '***', 's3.secret-key' = '***', 'region' = 'eu-1')",
        details: '{"customInfo":{"metalake":"acme","jdbc-password":"***"},"status":"SUCCESS"}',
        redacted: 3,
      });
      const plain = (await t.node.store.getByEventId('plain'))!;
      expect(plain.query).toBe('SELECT 1');
      expect(plain.details).toBe('password reset page');
      expect('redacted' in plain).toBe(false);
      const raw = await storedBytes(t);
      for (const secret of ['AKIAEXAMPLE', 'wJalrXUtnFEMI', 'hunter2']) expect(raw).not.toContain(secret);
    });
  }

  it('follows audit.redact.keys as changed at runtime: validated, audited, applied to the next request', async () => {
    const t = await startTestNode();
    const refused = await setKeys(t, 'password,,x');
    expect(refused).toEqual({ status: 400, json: { status: 'error', error: 'audit.redact.keys must be key names separated by commas, with no empty entry: password,,x', code: 'AUDIT_SETTINGS_INVALID' } });
    expect((await setKeys(t, 'region')).status).toBe(200);
    await t.ingest(event({ eventId: 'after', query: SQL }));
    expect((await t.node.store.getByEventId('after'))!.query).toBe("CREATE CATALOG lake WITH ('s3.access-key' = 'AKIAEXAMPLE', 's3.secret-key' = 'wJalrXUtnFEMI', 'region' = '***')");
    const audit = (await t.stored()).filter((e) => e.action === 'audit:UpdateSettings');
    expect(audit).toHaveLength(1);
    expect(audit[0]!.details).toMatch(/^audit\.redact\.keys: password,passwd,.* → region$/);
    expect((await setKeys(t, '')).status).toBe(200);
    await t.ingest(event({ eventId: 'off', query: 'password=x' }));
    expect((await t.node.store.getByEventId('off'))!.query).toBe('password=x');
  });

  it('takes its key list from auditlake.audit.redact.keys at start', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.redact.keys': 'ssn' } });
    await t.ingest(event({ eventId: 'cfg', query: 'ssn=123-45 password=p' }));
    expect((await t.node.store.getByEventId('cfg'))).toMatchObject({ query: 'ssn=*** password=p', redacted: 1 });
  });
});
