// Goal: an ingest body is evidence taken as sent: ids that differ only in ill-formed Unicode, bytes that are not UTF-8, another charset and impossible dates are refused whole, never altered or merged.
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { INGEST_TOKEN, event, startTestNode, type TestNode } from './test-node.js';

async function postBytes(t: TestNode, body: Uint8Array | string, contentType = 'application/json'): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await t.request('/v1/api/audit', { method: 'POST', token: INGEST_TOKEN, headers: { 'content-type': contentType }, body });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('ingest: Unicode, UTF-8, charset and time bounds', () => {
  it('refuses eventIds with a lone surrogate, so "a\\ud800", "a\\udfff" and "a\\ufffd" can never collapse into one stored event', async () => {
    const t = await startTestNode();
    for (const id of ['a\ud800', 'a\udfff']) {
      const res = await t.ingest([event({ eventId: 'fine' }), event({ eventId: id })]);
      expect(res.status).toBe(400);
      expect(res.json['error']).toBe(`events[1].eventId is not well-formed Unicode: a lone surrogate (U+${id.charCodeAt(1).toString(16).toUpperCase()}) at character 1`);
    }
    expect(await t.stored()).toEqual([]);
    expect((await t.ingest([event({ eventId: 'a\ufffd' })])).json).toEqual({ status: 'ok', ingested: 1 });
    expect((await t.stored()).map((e) => e.eventId)).toEqual(['a\ufffd']);
  });

  it('refuses a lone surrogate in any string field, naming it', async () => {
    const t = await startTestNode();
    for (const [overrides, field] of [
      [{ userId: '\udc00x' }, 'userId'],
      [{ source: 'trino\ud83d' }, 'source'],
      [{ action: 'data:\udfffSelect' }, 'action'],
      [{ resource: 'r\ud800' }, 'resource'],
      [{ tables: ['hive.a', 'hive.\ud800b'] }, 'tables[1]'],
      [{ query: 'SELECT \ud800' }, 'query'],
      [{ details: 'x\udbff' }, 'details'],
    ] as const) {
      const res = await t.ingest(event(overrides));
      expect(res.status, field).toBe(400);
      expect(res.json['error']).toMatch(new RegExp(`^event\\.${field.replace(/[[\]]/g, '\\$&')} is not well-formed Unicode: a lone surrogate`));
    }
    // A surrogate pair is a character like any other.
    expect((await t.ingest(event({ userId: 'emoji-\ud83d\ude00' }))).status).toBe(200);
    expect((await t.stored()).map((e) => e.userId)).toEqual(['emoji-\ud83d\ude00']);
  });

  it('refuses a body with bytes that are not UTF-8, naming the offset, instead of storing U+FFFD in their place', async () => {
    const t = await startTestNode();
    const prefix = Buffer.from('[{"source":"trino","userId":"a', 'utf8');
    for (const bad of [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80]]) {
      const body = Buffer.concat([prefix, Buffer.from(bad), Buffer.from('","action":"data:Select"}]', 'utf8')]);
      const res = await postBytes(t, body);
      expect(res.status, bad.join(',')).toBe(400);
      expect(res.json['error']).toBe(`request body is not valid UTF-8: an invalid byte sequence at byte offset ${prefix.length}`);
    }
    expect(await t.stored()).toEqual([]);
  });

  it('answers 415 to a compressed body, naming its Content-Encoding, and stores nothing (it was refused as invalid UTF-8 at byte 1)', async () => {
    const t = await startTestNode();
    const body = gzipSync(JSON.stringify([event({ eventId: 'zipped' })]));
    for (const encoding of ['gzip', 'br', 'deflate']) {
      const res = await t.request('/v1/api/audit', { method: 'POST', token: INGEST_TOKEN, headers: { 'content-type': 'application/json', 'content-encoding': encoding }, body });
      expect(res.status, encoding).toBe(415);
      expect(((await res.json()) as { error: string }).error).toBe(`unsupported Content-Encoding ${encoding}: request bodies are taken uncompressed (send the JSON without Content-Encoding)`);
    }
    expect(await t.stored()).toEqual([]);
    const plain = await t.request('/v1/api/audit', { method: 'POST', token: INGEST_TOKEN, headers: { 'content-type': 'application/json', 'content-encoding': 'identity, Identity' }, body: JSON.stringify([event({ eventId: 'plain' })]) });
    expect(plain.status).toBe(200);
    // A request without a body has nothing compressed to refuse, whatever it says.
    expect((await t.request('/health', { token: null, headers: { 'content-encoding': 'gzip' } })).status).toBe(200);
    expect((await t.request('/admin/audit?limit=1', { headers: { 'content-encoding': 'gzip' } })).status).toBe(200);
  });

  it('answers 415 to a declared charset other than utf-8, storing nothing, and takes utf-8 declared or not', async () => {
    const t = await startTestNode();
    const body = JSON.stringify([event({ userId: 'caf\u00e9' })]);
    for (const contentType of ['application/json; charset=latin1', 'application/json;charset="ISO-8859-1"', 'application/json; charset=utf-16']) {
      const res = await postBytes(t, body, contentType);
      expect(res.status, contentType).toBe(415);
      expect(res.json['error']).toMatch(/^unsupported charset .+: request bodies must be UTF-8 \(send Content-Type: application\/json or application\/json; charset=utf-8\)$/);
    }
    expect(await t.stored()).toEqual([]);
    for (const contentType of ['application/json', 'application/json; charset=utf-8', 'application/json; charset="UTF-8"']) {
      expect((await postBytes(t, body, contentType)).status, contentType).toBe(200);
    }
    expect((await t.stored()).map((e) => e.userId)).toEqual(['caf\u00e9', 'caf\u00e9', 'caf\u00e9']);
  });

  it('refuses ts past 9999-12-31T23:59:59.999Z as no day, and one up to it that is more than a day ahead of the clock', async () => {
    const t = await startTestNode();
    const late = await t.ingest([event({ ts: 253_402_300_800_000 })]);
    expect(late.status).toBe(400);
    expect(late.json['error']).toBe('events[0].ts must be at most 253402300799999 (9999-12-31T23:59:59.999Z): 253402300800000');
    // The last instant with a day is taken on a clock within a day of it (the model's tests); on this one it is ahead.
    const ahead = await t.ingest([event({ eventId: 'last', ts: 253_402_300_799_999 })]);
    expect(ahead.status).toBe(400);
    expect(ahead.json['error']).toMatch(/^events\[0\]\.ts 253402300799999 \(9999-12-31T23:59:59\.999Z\) is more than a day ahead of this node's clock/);
    expect(await t.stored()).toEqual([]);
    const dayAhead = Date.now() + 86_400_000 - 60_000;
    expect((await t.ingest([event({ eventId: 'soon', ts: dayAhead })])).status).toBe(200);
    expect((await t.stored()).map((e) => e.timestamp)).toEqual([dayAhead]);
  });

  it('judges a ts "ahead" against the log\'s ingest clock too: a node restarted with a clock a day and more slow takes correctly timed events', async () => {
    const first = await startTestNode();
    expect((await first.ingest([event({ eventId: 'before' })])).status).toBe(200);
    await first.node.close();
    // The same data, the node's clock now 25 hours slow; its log's ingest times are today's.
    const slow = await startTestNode({ dataDir: first.dataDir, props: { 'auditlake.debug.clock.offset.ms': String(-25 * 3_600_000) } });
    const now = Date.now();
    const res = await slow.ingest([event({ eventId: 'timed-now', ts: now })]);
    expect(res.status).toBe(200);
    expect((await slow.stored()).find((e) => e.eventId === 'timed-now')?.timestamp).toBe(now);
    // What is ahead of both is still refused.
    const ahead = await slow.ingest([event({ eventId: 'future', ts: now + 3 * 86_400_000 })]);
    expect(ahead.status).toBe(400);
    expect(ahead.json['error']).toMatch(/^events\[0\]\.ts \d+ \(.*\) is more than a day ahead of the log's ingest clock \(.*; this node's reads .*\): an event cannot have happened yet$/);
  });
});
