// Goal: each peer system's own recipes (grep, jq, log-service queries) answer the same through the auditlake API after an import, as docs/import.md shows them.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { EventOutput } from '@auditlake/model';
import type { AuditNode } from '@auditlake/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, FIXTURES, runImport, startNode } from './import-node.js';

let node: AuditNode;
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

beforeAll(async () => {
  node = await startNode({}, (fn) => cleanups.push(fn));
  for (const format of ['gravitino', 'lakekeeper', 'lho', 'las']) {
    const run = await runImport(node, ['--format', format, join(FIXTURES, format, 'logs')]);
    expect(run.code).toBe(3);
  }
});

async function lines(format: string, file: string): Promise<string[]> {
  return (await readFile(join(FIXTURES, format, 'logs', file), 'utf8')).split('\n');
}

/** Lines a recipe would see, without those the import refused (a broken line is no event). */
async function importable(format: string, file: string): Promise<Array<{ line: number; text: string }>> {
  const refused = new Set((JSON.parse(await readFile(join(FIXTURES, format, 'expected.json'), 'utf8')) as { refused: string[] }).refused);
  return (await lines(format, file)).map((text, i) => ({ line: i + 1, text })).filter((l) => l.text !== '' && !refused.has(`${file.split('/').pop()}:${l.line}`) && !refused.has(`${file}:${l.line}`));
}

/** `jq -R 'fromjson? | …'`: the JSON lines of a file, others skipped. */
async function jsonRecords(format: string, file: string): Promise<Array<Record<string, unknown>>> {
  const records: Array<Record<string, unknown>> = [];
  for (const { text } of await importable(format, file)) {
    try {
      records.push(JSON.parse(text) as Record<string, unknown>);
    } catch {
      // fromjson? drops it
    }
  }
  return records;
}

function sig(userId: string, timestamp: number, action: string): string {
  return `${userId} ${new Date(timestamp).toISOString()} ${action}`;
}
const eventSig = (e: EventOutput) => sig(e.userId, e.timestamp, e.action);

async function api(query: string): Promise<EventOutput[]> {
  return allEvents(node, query);
}

describe('Gravitino: grep -E "GRANT_|REVOKE_|OVERRIDE_PRIVILEGES|SET_OWNER" gravitino_audit.log', () => {
  it('is q=GRANT_, q=REVOKE_, q=OVERRIDE_PRIVILEGES and q=SET_OWNER', async () => {
    const grep = (await importable('gravitino', 'pod-a/gravitino_audit.log')).filter((l) => /GRANT_|REVOKE_|OVERRIDE_PRIVILEGES|SET_OWNER/.test(l.text));
    expect(grep.length).toBe(8);
    const found = new Map<string, EventOutput>();
    for (const q of ['GRANT_', 'REVOKE_', 'OVERRIDE_PRIVILEGES', 'SET_OWNER']) for (const e of await api(`&engine=gravitino&q=${q}`)) found.set(e.eventId, e);
    // The rotated .gz file holds one more grant, which grep (not zgrep) does not read.
    const fromCurrentFile = [...found.values()].filter((e) => e.timestamp >= Date.parse('2026-10-07T00:00:00Z'));
    expect(fromCurrentFile.map((e) => e.action).sort()).toEqual(grep.map((l) => /\t([A-Z_]+)\t|"operationType":"([A-Z_]+)"/.exec(l.text)!.slice(1).find(Boolean)).sort());
    expect(found.size).toBe(grep.length + 1);
  });
});

describe('Lakekeeper jq recipes', () => {
  it('denied authorizations (outages included): .decision == "denied" is q="decision":"denied"', async () => {
    const jq = (await jsonRecords('lakekeeper', 'lakekeeper.log')).filter((r) => r['event_source'] === 'audit' && r['decision'] === 'denied');
    const answer = await api(`&engine=lakekeeper&q=${encodeURIComponent('"decision":"denied"')}`);
    expect(answer.map(eventSig).sort()).toEqual(jq.map((r) => sig(principal(r), Date.parse(String(r['time'])), actionNames(r))).sort());
    expect(jq.length).toBe(8);
  });

  it('real refusals (failure_reason a verdict, not an outage) are decision DENY, with admission refusals besides', async () => {
    const verdicts = ['action_forbidden', 'resource_not_found', 'cannot_see_resource'];
    const records = await jsonRecords('lakekeeper', 'lakekeeper.log');
    const jq = records.filter((r) => r['event_source'] === 'audit' && r['decision'] === 'denied' && verdicts.includes(String(r['failure_reason'])));
    // Admission rejections carry no decision field, so the jq filter misses them; they are refusals.
    const admission = records.filter((r) => r['operation'] === 'admission_decided' && r['outcome'] === 'forbidden');
    const answer = await api('&engine=lakekeeper&decision=DENY');
    expect(answer.map(eventSig).sort()).toEqual([...jq.map((r) => sig(principal(r), Date.parse(String(r['time'])), actionNames(r))), ...admission.map((r) => sig(principal(r), Date.parse(String(r['time'])), String(r['operation'])))].sort());
    expect(jq.length).toBe(6);
    // The same set as authorizations[].allowed == false, Lakekeeper's other spelling of it.
    const allowedFalse = records.filter((r) => r['event_source'] === 'audit' && r['decision'] === 'denied' && (r['authorizations'] as Array<{ allowed?: boolean }>).some((a) => a.allowed === false));
    expect(allowedFalse.length).toBe(jq.length);
  });

  it('a refusal inside a batch check: any(.authorizations[]; .allowed == false) is q="allowed":false', async () => {
    const jq = (await jsonRecords('lakekeeper', 'lakekeeper.log')).filter((r) => r['event_source'] === 'audit' && ((r['authorizations'] as Array<{ allowed?: boolean }> | undefined) ?? []).some((a) => a.allowed === false));
    const answer = await api(`&engine=lakekeeper&q=${encodeURIComponent('"allowed":false')}`);
    expect(answer.map(eventSig).sort()).toEqual(jq.map((r) => sig(principal(r), Date.parse(String(r['time'])), actionNames(r))).sort());
    expect(answer.some((e) => e.action === 'introspect_permissions' && e.decision === 'ALLOW')).toBe(true);
  });

  it('a user, a table, grant changes, LDAP outcomes and a failing-closed gate', async () => {
    const records = (await jsonRecords('lakekeeper', 'lakekeeper.log')).filter((r) => r['event_source'] === 'audit');
    const same = async (query: string, select: (r: Record<string, unknown>) => boolean) => {
      const jq = records.filter(select);
      expect(jq.length, query).toBeGreaterThan(0);
      expect((await api(`&engine=lakekeeper&${query}`)).map(eventSig).sort(), query).toEqual(jq.map((r) => sig(principal(r), Date.parse(String(r['time'])), r['record_type'] === 'operation' ? String(r['operation']) : actionNames(r))).sort());
    };
    await same('user=oidc~analyst@example.com', (r) => (r['actor'] as { principal?: string } | undefined)?.principal === 'oidc~analyst@example.com');
    await same('table=sensitive_data', (r) => ((r['entities'] as Array<{ table?: string }> | undefined) ?? []).some((e) => e.table === 'sensitive_data'));
    await same('q=apply_grants', (r) => ((r['actions'] as Array<{ action_name?: string }> | undefined) ?? []).some((a) => a.action_name === 'apply_grants'));
    await same('q=ldap_resolve_roles', (r) => r['operation'] === 'ldap_resolve_roles');
    await same(`q=${encodeURIComponent('"outcome":"user_not_found"')}`, (r) => r['outcome'] === 'user_not_found');
    await same(`q=${encodeURIComponent('"outcome":"unavailable"')}`, (r) => r['operation'] === 'admission_decided' && r['outcome'] === 'unavailable');
  });
});

describe('LHO: authentication attempts that failed', () => {
  it('are q=LOGIN with decision none (a FAILURE) or DENY', async () => {
    const raw = (await jsonRecords('lho', 'clo-audit.log.42')).filter((r) => r['action'] === 'LOGIN' && r['outcome'] !== 'SUCCESS');
    const answer = [...(await api('&engine=lho&q=LOGIN&decision=none')), ...(await api('&engine=lho&q=LOGIN&decision=DENY'))];
    expect(answer.map(eventSig).sort()).toEqual(raw.map((r) => sig(typeof r['userName'] === 'string' ? r['userName'] : 'unknown', Date.parse(String(r['timestamp'])), 'LOGIN')).sort());
    expect(raw.length).toBe(2);
  });
});

describe('LAS: event_name per identifier type', () => {
  it('is q="identifier_type":"<type>", grouped by action', async () => {
    const want = (JSON.parse(await readFile(join(FIXTURES, 'las', 'expected.json'), 'utf8')) as { events: Array<{ action: string; identifierType: string }> }).events;
    for (const type of ['catalog', 'database', 'table', 'permission', 'view', 'function', 'other']) {
      const answer = await api(`&engine=las&q=${encodeURIComponent(`"identifier_type":"${type}"`)}`);
      expect(answer.map((e) => e.action).sort(), type).toEqual(want.filter((w) => w.identifierType === type).map((w) => w.action).sort());
    }
  });
});

function principal(record: Record<string, unknown>): string {
  const actor = record['actor'] as { principal?: string; actor_type?: string } | undefined;
  return actor?.principal ?? actor?.actor_type ?? 'unknown';
}

function actionNames(record: Record<string, unknown>): string {
  return ((record['actions'] as Array<{ action_name: string }> | undefined) ?? []).map((a) => a.action_name).join(',') || String(record['operation']);
}
