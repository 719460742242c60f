// Goal: a node keeps its record chain provable by itself — it registers its public key in the
// log, signs checkpoints every N records or T ms, lists them (admins only) — and refuses the
// actions only it may record, storing nothing of such a request, and refuses to erase any of
// its own records (integrity records and control-plane records alike), erasing nothing of such
// a request.
import { ChainVerifier, parseSignedCheckpoint, type VerifyRecord } from '@auditlake/integrity';
import { describe, expect, it } from 'vitest';
import { RECORDS_PAGE_BYTES_MAX } from '../src/routes/integrity-route.js';
import { event, INGEST_TOKEN, startTestNode, type TestNode } from './test-node.js';

interface View {
  nodeId: string;
  keyId: string;
  chainEnabled: boolean;
  chainId: string;
  head: { seq: number; chainHash: string };
  keys: Array<{ seq: number; key: string }>;
  checkpoints: Array<{ seq: number; checkpoint: string }>;
  pruned: unknown[];
}

async function view(t: TestNode): Promise<View> {
  const res = await t.request('/admin/audit/integrity');
  expect(res.status).toBe(200);
  return (await res.json()) as View;
}

async function waitFor(what: string, condition: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function records(t: TestNode, query = ''): Promise<VerifyRecord[]> {
  const res = await t.request(`/admin/audit/integrity/records${query}`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('application/x-ndjson');
  return (await res.text())
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as VerifyRecord);
}

describe('the leader keeps the chain provable', () => {
  it('registers its key, then signs a checkpoint every N records, each linked to the one before', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.integrity.checkpoint.events': '5', 'auditlake.audit.integrity.checkpoint.interval.ms': '3600000' } });
    // Two rounds of 6 records, each waited for: how many records one tick sees depends on the
    // machine's speed, so each round is made to complete a checkpoint on its own.
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 6; i++) expect((await t.ingest(event({ eventId: `e${round}-${i}` }))).status).toBe(200);
      await waitFor(`checkpoint ${round + 1}`, async () => (await view(t)).checkpoints.length >= round + 1);
    }
    const v = await view(t);
    expect(v.chainEnabled).toBe(true);
    expect(v.keys).toHaveLength(1);
    expect(JSON.parse(v.keys[0]?.key as string)).toMatchObject({ keyId: v.keyId, nodeId: v.nodeId });
    const [first, second] = v.checkpoints.map((c) => parseSignedCheckpoint(c.checkpoint));
    expect(first).toMatchObject({ keyId: v.keyId, chainId: v.chainId, previousCheckpointHash: '' });
    expect(second?.previousCheckpointHash).toMatch(/^[0-9a-f]{64}$/);
    expect((second?.seq as number) - (first?.seq as number)).toBeGreaterThanOrEqual(5);
    // The records endpoint pages the log in seq order, and what it gives verifies.
    const all = await records(t, '?limit=10000');
    expect(all.map((r) => r.seq)).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
    expect((await records(t, '?afterSeq=3&limit=2')).map((r) => r.seq)).toEqual([4, 5]);
    const verifier = new ChainVerifier({ startSeq: 1 });
    for (const record of all) verifier.add(record);
    expect(verifier.finish()).toMatchObject({ ok: true, records: all.length });
  });

  it('signs a checkpoint after the interval when fewer than N records came', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.integrity.checkpoint.events': '1000000', 'auditlake.audit.integrity.checkpoint.interval.ms': '200' } });
    expect((await t.ingest([event({ eventId: 'a' }), event({ eventId: 'b' })])).status).toBe(200);
    await waitFor('a checkpoint', async () => (await view(t)).checkpoints.length >= 1);
    const checkpoint = parseSignedCheckpoint((await view(t)).checkpoints[0]?.checkpoint as string);
    expect(checkpoint.seq).toBeGreaterThanOrEqual(3);
  });

  it('signs the next checkpoint on time after the clock stepped back behind the last one', async () => {
    const props = { 'auditlake.audit.integrity.checkpoint.events': '3', 'auditlake.audit.integrity.checkpoint.interval.ms': '200' };
    // A day fast: its checkpoint is timed a day ahead.
    const fast = await startTestNode({ props: { ...props, 'auditlake.debug.clock.offset.ms': '86400000' } });
    expect((await fast.ingest([event({ eventId: 'a' }), event({ eventId: 'b' }), event({ eventId: 'c' })])).status).toBe(200);
    await waitFor('a checkpoint', async () => (await view(fast)).checkpoints.length >= 1);
    await fast.node.close();
    // The clock set right, and too few records for the count: only the interval can make one due.
    const right = await startTestNode({ dataDir: fast.dataDir, props: { ...props, 'auditlake.audit.integrity.checkpoint.events': '1000000' } });
    const before = (await view(right)).checkpoints.length;
    expect((await right.ingest([event({ eventId: 'd' })])).status).toBe(200);
    await waitFor('a checkpoint on time', async () => (await view(right)).checkpoints.length > before);
    const checkpoints = (await view(right)).checkpoints;
    const newest = parseSignedCheckpoint(checkpoints.reduce((a, b) => (b.seq > a.seq ? b : a)).checkpoint);
    expect(newest.timeMs).toBeLessThan(Date.now() + 60_000);
  });

  it('cuts a page of records at RECORDS_PAGE_BYTES_MAX bytes (at least one record), and the pages after it hold the rest, each record once', async () => {
    const t = await startTestNode();
    // 640 events with a 64 KiB query each: about 42 MB of records, more than one page's bytes.
    for (let batch = 0; batch < 8; batch++) {
      const events = Array.from({ length: 80 }, (_, i) => event({ eventId: `big-${batch}-${i}`, query: `select '${String(batch * 80 + i).padStart(4, '0')}${'q'.repeat(64 * 1024 - 20)}'` }));
      expect((await t.ingest(events)).status).toBe(200);
    }
    // The bytes the page reads from the store, as it reads them.
    let read = 0;
    const store = t.node.store;
    const readEncoded = store.readEncodedBySeq.bind(store);
    store.readEncodedBySeq = async (afterSeq, limit) => {
      const entries = await readEncoded(afterSeq, limit);
      for (const entry of entries) read += entry.byteLength;
      return entries;
    };
    const res = await t.request('/admin/audit/integrity/records?limit=10000');
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(RECORDS_PAGE_BYTES_MAX);
    // Read a batch at a time up to the cap (two batches of 256 here), not all 42 MB and cut after.
    expect(read).toBeLessThan(40 * 1024 * 1024);
    const first = body.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as VerifyRecord);
    expect(first.length).toBeGreaterThan(0);
    const all = [...first];
    while (all.length > 0) {
      const next = await records(t, `?afterSeq=${all.at(-1)!.seq}&limit=10000`);
      if (next.length === 0) break;
      all.push(...next);
    }
    const seqs = all.map((r) => r.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(all.filter((r) => r.eventId.startsWith('big-'))).toHaveLength(640);
    expect(first.length).toBeLessThan(all.length);
  }, 60_000);

  it('lists nothing to non-admins and refuses bad paging, naming the parameter', async () => {
    const t = await startTestNode();
    expect((await t.request('/admin/audit/integrity', { token: INGEST_TOKEN })).status).toBe(403);
    expect((await t.request('/admin/audit/integrity/records', { token: null })).status).toBe(401);
    const res = await t.request('/admin/audit/integrity/records?limit=10001');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('parameter limit must be an integer from 0 to 10000: 10001');
    expect((await t.request('/admin/audit/integrity/records?afterSeq=-1')).status).toBe(400);
    const errorOf = async (query: string) => {
      const answer = await t.request(`/admin/audit/integrity/records${query}`);
      expect(answer.status).toBe(400);
      return ((await answer.json()) as { error: string }).error;
    };
    // A misspelt parameter is refused, as the search refuses one, not read as absent.
    expect(await errorOf('?afterseq=5')).toBe('unknown parameter: afterseq (known: afterSeq, limit)');
    expect(await errorOf('?limit=5&limit=6')).toBe('parameter limit must be given once: ["5","6"]');
  });

  it('keeps no chain with auditlake.audit.integrity.chain.enabled=false (to measure its cost)', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.integrity.chain.enabled': 'false', 'auditlake.audit.integrity.checkpoint.interval.ms': '100' } });
    expect((await t.ingest(event({ eventId: 'plain' }))).status).toBe(200);
    const [stored] = await t.stored();
    expect(stored).not.toHaveProperty('chainHash');
    const v = await view(t);
    expect(v.chainEnabled).toBe(false);
    expect(v.keys).toEqual([]);
  });
});

describe('ingest', () => {
  it('refuses the actions only auditlake records, and stores nothing of the request', async () => {
    const t = await startTestNode();
    const { status, json } = await t.ingest([event({ eventId: 'fine' }), event({ eventId: 'forged', source: 'auditlake', action: 'integrity:Checkpoint' })]);
    expect(status).toBe(400);
    expect(json['error']).toBe('events[1].action integrity:Checkpoint of source auditlake is reserved: only auditlake itself records it');
    expect((await t.stored()).filter((e) => e.eventId === 'fine' || e.eventId === 'forged')).toEqual([]);
  });

  it('refuses an event of auditlake\'s own source from a client (a forged settings change), and stores nothing of the request', async () => {
    const t = await startTestNode();
    const forged = event({ eventId: 'forged-settings', source: 'AuditLake', userId: 'admin', action: 'audit:UpdateSettings', resource: 'audit.settings', details: 'audit.retention.days: 1 → 3650' });
    const { status, json } = await t.ingest([event({ eventId: 'fine' }), forged]);
    expect(status).toBe(400);
    expect(json['error']).toBe('events[1].source "AuditLake" is reserved: only auditlake itself records events of source auditlake; send your events under your engine\'s name');
    expect((await t.stored()).filter((e) => e.eventId === 'fine' || e.eventId === 'forged-settings')).toEqual([]);
  });

  it('keeps sourceId and sourceSeq, hashed with the record', async () => {
    const t = await startTestNode();
    expect((await t.ingest(event({ eventId: 's1', sourceId: 'trino-1', sourceSeq: 7 }))).status).toBe(200);
    const record = (await records(t)).find((r) => r.eventId === 's1');
    expect(record).toMatchObject({ sourceId: 'trino-1', sourceSeq: 7 });
    const verifier = new ChainVerifier();
    verifier.add({ ...(record as VerifyRecord), sourceSeq: 8 });
    expect(verifier.finish().message).toMatch(/field sourceSeq changed/);
  });
});

describe('POST /admin/audit/erase', () => {
  it('replaces the named fields by the marker, keeps the proof, and is itself an audit event', async () => {
    const t = await startTestNode();
    expect((await t.ingest([event({ eventId: 'x1', userId: 'carol', query: 'SELECT ssn FROM people' }), event({ eventId: 'x2' })])).status).toBe(200);
    const res = await t.request('/admin/audit/erase', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventIds: ['x1'], fields: ['userId', 'query'] }) });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { erased: number; erasureSeqs: number[] };
    expect(answer).toMatchObject({ status: 'ok', erased: 1, fields: ['userId', 'query'] });
    const all = await records(t, '?limit=10000');
    const erased = all.find((r) => r.eventId === 'x1');
    expect(erased).toMatchObject({ userId: '[erased by auditlake]', query: '[erased by auditlake]' });
    expect(JSON.stringify(all)).not.toContain('SELECT ssn');
    const erasure = all.find((r) => r.seq === answer.erasureSeqs[0]);
    expect(erasure).toMatchObject({ source: 'auditlake', action: 'audit:EraseFields', userId: 'admin' });
    const verifier = new ChainVerifier({ startSeq: 1 });
    for (const record of all) verifier.add(record);
    const report = verifier.finish();
    expect(report.ok).toBe(true);
    expect(report.message).toMatch(/; 2 fields erased$/);
  });

  it('refuses an unknown event or field, naming it, and erases nothing', async () => {
    const t = await startTestNode();
    expect((await t.ingest(event({ eventId: 'y1' }))).status).toBe(200);
    const post = (body: unknown) => t.request('/admin/audit/erase', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    let res = await post({ eventIds: ['y1', 'nope'], fields: ['query'] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe("event not in this node's log nor in the tier: nope; nothing was erased");
    res = await post({ eventIds: ['nope', 'y1', 'gone'], fields: ['query'] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe("2 events not in this node's log nor in the tier: nope, gone; nothing was erased");
    res = await post({ eventIds: ['y1'], fields: ['eventId'] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('fields[0] must be one of userId, resource, tables, query, details: "eventId"; nothing was erased');
    // A key the request may not hold is named, not ignored: a dry run asked of a version without one erases nothing.
    res = await post({ eventIds: ['y1'], fields: ['query'], dryRun: true });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('unknown key "dryRun" (an erase request holds eventIds and fields only); nothing was erased');
    res = await t.request('/admin/audit/erase?dryRun=true', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventIds: ['y1'], fields: ['query'] }) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('unknown parameter: dryRun (known: ack); nothing was erased');
    // Ids no event can have (ingest refuses them) are named by place, not looked for and echoed.
    res = await post({ eventIds: ['y1', 'a\ud800'], fields: ['query'] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('eventIds[1] is not well-formed Unicode (a lone surrogate): no event has such an id; nothing was erased');
    res = await post({ eventIds: ['x'.repeat(100_000)], fields: ['query'] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('eventIds[0] is 100000 characters long, and an eventId is at most 128: no event has such an id; nothing was erased');
    expect((await t.request('/admin/audit/erase', { method: 'POST', token: INGEST_TOKEN, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventIds: ['y1'], fields: ['query'] }) })).status).toBe(403);
    // ack=replicated needs a standby; an ack that is neither is named.
    res = await t.request('/admin/audit/erase?ack=replicated', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventIds: ['y1'], fields: ['query'] }) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('ack=replicated needs a standby, and this node runs without a cluster (--coordinator); nothing was erased');
    res = await t.request('/admin/audit/erase?ack=all', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventIds: ['y1'], fields: ['query'] }) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe('parameter ack must be local or replicated: all; nothing was erased');
    const after = await records(t, '?limit=10000');
    // No erasure record (the refused request's DENY record, written beside it when it is, names the action too).
    expect(after.filter((r) => r.action === 'audit:EraseFields' && r.decision !== 'DENY')).toEqual([]);
    expect(after.find((r) => r.eventId === 'y1')?.query).toBe('SELECT 1');
  });

  it('refuses to erase on a node with the record chain off, saying why, and erases nothing', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.integrity.chain.enabled': 'false' } });
    expect((await t.ingest(event({ eventId: 'z1', query: 'SELECT secret' }))).status).toBe(200);
    const res = await t.request('/admin/audit/erase', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventIds: ['z1'], fields: ['query'] }) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe(
      "erasure keeps the erased fields' hashes in the record chain, which is off on this node (auditlake.audit.integrity.chain.enabled=false); nothing was erased",
    );
    const after = await records(t, '?limit=10000');
    expect(after.filter((r) => r.action === 'audit:EraseFields' && r.decision !== 'DENY')).toEqual([]);
    expect(after.find((r) => r.eventId === 'z1')?.query).toBe('SELECT secret');
  });

  it('refuses to erase its own integrity records (an erasure, a checkpoint, a key registration), naming each, and erases nothing', async () => {
    const t = await startTestNode({ props: { 'auditlake.audit.integrity.checkpoint.events': '2', 'auditlake.audit.integrity.checkpoint.interval.ms': '3600000' } });
    expect((await t.ingest([event({ eventId: 'z1', query: 'SELECT card FROM payments' }), event({ eventId: 'z2' }), event({ eventId: 'z3' })])).status).toBe(200);
    const post = (body: unknown) => t.request('/admin/audit/erase', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post({ eventIds: ['z1'], fields: ['query'] })).status).toBe(200);
    await waitFor('a checkpoint', async () => (await view(t)).checkpoints.length > 0);
    const before = await records(t, '?limit=10000');
    const erasure = before.find((r) => r.action === 'audit:EraseFields')!;
    const checkpoint = before.find((r) => r.action === 'integrity:Checkpoint')!;
    const key = before.find((r) => r.action === 'integrity:RegisterKey')!;
    const why = "of auditlake's own records (source auditlake: settings changes, refused access, tier adoptions, maintenance runs, erasures, checkpoints, key registrations), which cannot be erased; nothing was erased";
    for (const record of [erasure, checkpoint, key]) {
      // Named beside an ordinary event: the whole request is refused.
      const res = await post({ eventIds: ['z2', record.eventId], fields: ['details', 'query'] });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ status: 'error', code: 'AUDIT_SELF_RECORD_NOT_ERASABLE', error: `event ${record.eventId} (${record.action}) is one ${why}` });
    }
    const res = await post({ eventIds: [erasure.eventId, 'z3', checkpoint.eventId], fields: ['details'] });
    expect(((await res.json()) as { error: string }).error).toBe(`2 events ${erasure.eventId} (audit:EraseFields), ${checkpoint.eventId} (integrity:Checkpoint) are ${why}`);

    const after = await records(t, '?limit=10000');
    // Still the one erasure, its details whole, and nothing of z2, z3 or the records erased.
    expect(after.filter((r) => r.action === 'audit:EraseFields' && r.decision !== 'DENY')).toEqual([erasure]);
    for (const record of [checkpoint, key]) expect(after.find((r) => r.seq === record.seq)).toEqual(record);
    expect(after.filter((r) => r.eventId === 'z2' || r.eventId === 'z3').map((r) => r.query)).toEqual(['SELECT 1', 'SELECT 1']);
    const verifier = new ChainVerifier({ startSeq: 1 });
    for (const record of after) verifier.add(record);
    expect(verifier.finish()).toMatchObject({ ok: true, message: expect.stringMatching(/; 1 field erased$/) as unknown });
  });

  it("refuses to erase its control-plane records (a settings change, a refusal): who changed retention stays on record", async () => {
    const t = await startTestNode();
    expect((await t.ingest([event({ eventId: 'c1' })])).status).toBe(200);
    const saved = await t.request('/admin/audit/settings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ 'audit.retention.days': 1 }) });
    expect(saved.status).toBe(200);
    expect((await t.request('/admin/audit', { token: 'not-a-token' })).status).toBe(401);
    let denial: Awaited<ReturnType<TestNode['stored']>>[number] | undefined;
    await waitFor('the refusal recorded', async () => (denial = (await t.stored()).find((e) => e.source === 'auditlake' && e.decision === 'DENY')) !== undefined);
    const before = await t.stored();
    const settings = before.find((e) => e.action === 'audit:UpdateSettings')!;
    expect(settings.details).toContain('audit.retention.days');
    const post = (body: unknown) => t.request('/admin/audit/erase', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    for (const record of [settings, denial!]) {
      const res = await post({ eventIds: ['c1', record.eventId], fields: ['userId', 'details'] });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        status: 'error',
        code: 'AUDIT_SELF_RECORD_NOT_ERASABLE',
        error: `event ${record.eventId} (${record.action}) is one of auditlake's own records (source auditlake: settings changes, refused access, tier adoptions, maintenance runs, erasures, checkpoints, key registrations), which cannot be erased; nothing was erased`,
      });
    }
    const after = await t.stored();
    // Nothing erased: no erasure record, the settings change and the refusal whole, c1 whole.
    expect(after.filter((e) => e.action === 'audit:EraseFields')).toEqual([]);
    for (const record of [settings, denial!]) expect(after.find((e) => e.eventId === record.eventId)).toEqual(record);
    expect(after.find((e) => e.eventId === 'c1')).toMatchObject({ userId: 'alice', details: before.find((e) => e.eventId === 'c1')!.details });
  });
});
