// Goal: eventId squatting is never silent. A second event under a taken eventId with other
// content is answered 200 but reported as a conflict (not a duplicate), the first stored event
// is kept, and the refusal is recorded: an audit:EventIdConflict self-audit event per request
// (naming the id, both content hashes and the sender) and auditlake_event_id_conflicts_total.
// A true retry (same content, also after an erasure, also without `ts`) stays a duplicate. A
// retry is hashed under a key of its own at ingest, so it is compared under the kept event's.
import { canonicalContent, RecordHasher } from '@auditlake/integrity';
import type { AuditEvent, StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { event, INGEST_TOKEN, startTestNode, type TestNode } from './test-node.js';

const TS = 1_790_000_000_000;
const hasher = new RecordHasher();

/** The content hash of an event as ingest stores it from `input` (every field given), under a stored record's salt. */
function contentHash(input: Record<string, unknown>, salt: string | undefined): string {
  const values = { resource: '', decision: '', tables: [], query: '', details: '', ...input, timestamp: input['ts'] } as unknown as AuditEvent;
  return hasher.content({ ...canonicalContent(values), salt }).hash;
}

async function saltOf(t: TestNode, eventId: string): Promise<string | undefined> {
  const salt = (await t.node.store.getByEventId(eventId))?.salt;
  expect(salt).toBeDefined();
  return salt;
}

async function conflictRecords(t: TestNode): Promise<StoredEvent[]> {
  return (await t.stored()).filter((e) => e.source === 'auditlake' && e.action === 'audit:EventIdConflict');
}

async function conflictsCounted(t: TestNode): Promise<number> {
  const text = await (await t.request('/metrics', { token: null })).text();
  const line = /^auditlake_event_id_conflicts_total (\d+)$/m.exec(text);
  if (line === null) throw new Error('auditlake_event_id_conflicts_total is not in /metrics');
  return Number(line[1]);
}

describe('eventId conflicts on a single node', () => {
  it('keeps the squatted event, answers the real one as a conflict, and records who sent it', async () => {
    const t = await startTestNode();
    const forged = event({ eventId: 'pay-42', userId: 'mallory', action: 'data:Select', ts: TS });
    const real = event({ eventId: 'pay-42', userId: 'alice', action: 'data:Delete', ts: TS });
    expect((await t.ingest([forged])).json).toEqual({ status: 'ok', ingested: 1 });
    const answer = await t.ingest([real, event({ eventId: 'other', ts: TS })]);
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ status: 'ok', ingested: 2, conflicts: 1, conflictEventIds: ['pay-42'] });
    // First writer wins: the log is append-only and chained.
    expect(await t.node.store.getByEventId('pay-42')).toMatchObject({ userId: 'mallory', seq: 1 });
    const salt = await saltOf(t, 'pay-42');
    const [record, ...more] = await conflictRecords(t);
    expect(more).toEqual([]);
    expect(record).toMatchObject({ userId: 'ingest', decision: 'DENY', resource: 'POST /v1/api/audit' });
    expect(record?.details).toBe(
      `refused 1 event whose eventId holds an event with other content (the event stored first is kept); eventId "pay-42": stored content ${contentHash(forged, salt)}, refused content ${contentHash(real, salt)}; sent by "ingest" from 127.0.0.1, received by node ${t.node.nodeId}`,
    );
    expect(await conflictsCounted(t)).toBe(1);
    // An investigator finds the record by searching for the id (free text covers details).
    const found = (await t.search('?q=pay-42')).json.events;
    expect(found.map((e) => e.action)).toEqual(['audit:EventIdConflict']);
  });

  it('takes a true retry as a duplicate: with and without ts, and not recorded as a conflict', async () => {
    const t = await startTestNode();
    const timed = [event({ eventId: 'r1', ts: TS }), event({ eventId: 'r2', ts: TS })];
    // No ts: the node gives the event its own time, so the retry is stored under another time.
    const untimed = [event({ eventId: 'r3' })];
    expect((await t.ingest([...timed, ...untimed])).json).toEqual({ status: 'ok', ingested: 3 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await t.ingest([...timed, ...untimed])).json).toEqual({ status: 'ok', ingested: 3, duplicates: 3 });
    expect(await conflictRecords(t)).toEqual([]);
    expect(await conflictsCounted(t)).toBe(0);
    // A sender that did state a time and changes it is another event.
    expect((await t.ingest([event({ eventId: 'r1', ts: TS + 1 })])).json).toEqual({ status: 'ok', ingested: 1, conflicts: 1, conflictEventIds: ['r1'] });
  });

  it('keeps the first of two different events with one eventId in one request', async () => {
    const t = await startTestNode();
    const first = event({ eventId: 'twice', query: 'SELECT 1', ts: TS });
    const second = event({ eventId: 'twice', query: 'DROP TABLE x', ts: TS });
    expect((await t.ingest([first, second, first])).json).toEqual({ status: 'ok', ingested: 3, duplicates: 1, conflicts: 1, conflictEventIds: ['twice'] });
    expect((await t.stored()).filter((e) => e.eventId === 'twice')).toMatchObject([{ query: 'SELECT 1' }]);
    const salt = await saltOf(t, 'twice');
    expect((await conflictRecords(t))[0]?.details).toContain(`eventId "twice": stored content ${contentHash(first, salt)}, refused content ${contentHash(second, salt)}`);
  });

  it('compares an erased event by its kept salts and field hashes: its retry is a duplicate, other content in a field not erased a conflict', async () => {
    const t = await startTestNode();
    const original = event({ eventId: 'pii', userId: 'carol', query: 'SELECT ssn FROM people', ts: TS });
    expect((await t.ingest([original])).status).toBe(200);
    const salt = await saltOf(t, 'pii');
    const res = await t.request('/admin/audit/erase', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventIds: ['pii'], fields: ['userId', 'query'] }) });
    expect(res.status).toBe(200);
    expect(await t.node.store.getByEventId('pii')).toMatchObject({ userId: '[erased by auditlake]' });
    expect((await t.ingest([original])).json).toEqual({ status: 'ok', ingested: 1, duplicates: 1 });
    // Only in an erased field: no longer comparable (its salt is gone with the value), so a duplicate.
    expect((await t.ingest([{ ...original, query: 'SELECT 1' }])).json).toEqual({ status: 'ok', ingested: 1, duplicates: 1 });
    const other = { ...original, resource: 'hr.people' };
    expect((await t.ingest([other])).json).toEqual({ status: 'ok', ingested: 1, conflicts: 1, conflictEventIds: ['pii'] });
    expect((await conflictRecords(t))[0]?.details).toContain(`stored content ${contentHash(original, salt)}, refused content ${contentHash(other, salt)}`);
  });

  it('bounds what it answers and records: one event per request naming 20, the answer naming 100', async () => {
    const t = await startTestNode();
    const ids = Array.from({ length: 150 }, (_, i) => `squat-${i}`);
    expect((await t.ingest(ids.map((eventId) => event({ eventId, details: 'forged', ts: TS })), INGEST_TOKEN)).status).toBe(200);
    const answer = (await t.ingest(ids.map((eventId) => event({ eventId, details: 'real', ts: TS })))).json;
    expect(answer).toMatchObject({ status: 'ok', ingested: 150, conflicts: 150 });
    expect(answer['conflictEventIds']).toEqual(ids.slice(0, 100));
    const records = await conflictRecords(t);
    expect(records).toHaveLength(1);
    expect(records[0]?.details).toMatch(/^refused 150 events whose eventId/);
    expect(records[0]?.details.match(/eventId "squat-\d+"/g)).toHaveLength(20);
    expect(records[0]?.details).toContain('; 130 more not named; sent by "ingest"');
    expect(await conflictsCounted(t)).toBe(150);
  });

  it('names the sender and its address whatever ids it chose: ids that escape long are named only while they fit beside them', async () => {
    const t = await startTestNode();
    // Twenty ids of 128 control characters, each written \u00XX in the record: ~15 KiB of names.
    const ids = Array.from({ length: 20 }, (_, i) => '\u0001'.repeat(127) + String.fromCharCode(0x0e + i));
    expect((await t.ingest(ids.map((eventId) => event({ eventId, query: 'SELECT 1', ts: TS })))).status).toBe(200);
    expect((await t.ingest(ids.map((eventId) => event({ eventId, query: 'SELECT 2', ts: TS })))).json).toMatchObject({ conflicts: 20 });
    const [record] = await conflictRecords(t);
    expect(record?.details).toMatch(/^refused 20 events whose eventId/);
    expect(record?.details).toMatch(new RegExp(`; \\d+ more not named; sent by "ingest" from 127\\.0\\.0\\.1, received by node ${t.node.nodeId}$`));
    expect(Buffer.byteLength(record?.details ?? '')).toBeLessThanOrEqual(16 * 1024);
  });
});
