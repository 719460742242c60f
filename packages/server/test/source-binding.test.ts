// Goal: with sourceIds bound to principals (auditlake.ingest.sources.<principal>), an event can
// fill or open holes in a source's completeness ledger only when its sender is bound to that
// source: any other principal — another ingest token, an admin, an access key, a JWT subject —
// sending it (or a look-alike of it) is refused with a 403 naming the sourceId and the
// principal, the refusal is recorded, and nothing of the request is stored; the ledger does not
// move. The bound principal keeps working, and events without a sourceId are not affected.
import { describe, expect, it } from 'vitest';
import { signHs256 } from '../src/index.js';
import { ADMIN_TOKEN, INGEST_TOKEN, event, startTestNode, type TestNode } from './test-node.js';

const TRINO = 'trino-secret';
const SPARK = 'spark-secret';
const JWT_SECRET = 'jwt-secret-for-tests';

const BOUND = {
  'auditlake.auth.tokens': `trino-writer:ingest:${TRINO},spark-writer:ingest:${SPARK}`,
  'auditlake.auth.access.keys': 'AKIDFLINK:ingest:flink-secret',
  'auditlake.auth.jwt.secret': JWT_SECRET,
  'auditlake.ingest.sources.trino-writer': 'plugin-trino',
  'auditlake.ingest.sources.spark-writer': 'plugin-spark, plugin-spark-2',
  'auditlake.ingest.sources.AKIDFLINK': 'plugin-flink',
};

async function ledgerOf(t: TestNode, sourceId: string): Promise<unknown> {
  const res = await t.request(`/admin/audit/ledger?sourceId=${encodeURIComponent(sourceId)}`);
  expect(res.status).toBe(200);
  const body = (await res.json()) as Record<string, unknown>;
  return { sources: body['sources'], sourcesTracked: body['sourcesTracked'], missing: body['missing'], otherSourceEvents: body['otherSourceEvents'] };
}

async function post(t: TestNode, body: unknown, authorization: string) {
  const res = await t.request('/v1/api/audit', { method: 'POST', headers: { 'content-type': 'application/json', authorization }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as { status: string; error?: string; code?: string; ingested?: number } };
}

const clientEvents = async (t: TestNode) => (await t.stored()).filter((e) => e.source !== 'auditlake');

describe('sourceIds bound to principals', () => {
  for (const threads of ['1', '0']) {
    it(`refuses another principal's sourceId, stores nothing and leaves the ledger as it was (parse threads ${threads})`, async () => {
      const t = await startTestNode({ props: { ...BOUND, 'auditlake.ingest.parse.threads': threads } });
      // The bound writer sends 1, 2 and 4: 3 is a hole.
      const own = await post(t, [1, 2, 4].map((s) => event({ eventId: `t${s}`, sourceId: 'plugin-trino', sourceSeq: s })), `Token ${TRINO}`);
      expect(own).toEqual({ status: 200, json: { status: 'ok', ingested: 3 } });
      const before = await ledgerOf(t, 'plugin-trino');
      expect(before).toMatchObject({ sources: [{ sourceId: 'plugin-trino', received: 3, contiguousThrough: 2, gaps: [{ fromSeq: 3, toSeq: 3 }], missing: 1 }], missing: 1 });
      const storedBefore = await clientEvents(t);

      // Another ingest principal fills the hole, in a batch with one of its own events first.
      const spoof = await post(t, [event({ eventId: 'own', sourceId: 'plugin-spark', sourceSeq: 1 }), event({ eventId: 'fill', sourceId: 'plugin-trino', sourceSeq: 3 })], `Token ${SPARK}`);
      expect(spoof.status).toBe(403);
      expect(spoof.json.code).toBe('AUDIT_SOURCE_NOT_BOUND');
      expect(spoof.json.error).toBe(
        'events[1].sourceId "plugin-trino" is not bound to principal "spark-writer": it may send only "plugin-spark", "plugin-spark-2" (auditlake.ingest.sources.spark-writer); nothing of the request was stored — send events under your own sourceId, or bind this one to "spark-writer" in the configuration of every node',
      );

      // The admin, a principal bound to nothing (the built-in ingest token), an access key and
      // a JWT subject are refused the same way; so are look-alikes and new sources by anyone.
      const jwt = signHs256({ sub: 'dana', role: 'admin', exp: Math.floor(Date.now() / 1000) + 600 }, JWT_SECRET);
      const attempts: Array<[string, string, RegExp]> = [
        [`Token ${ADMIN_TOKEN}`, 'plugin-trino', /^event\.sourceId "plugin-trino" is not bound to principal "admin": it is bound to no sourceId \(auditlake\.ingest\.sources\.admin is not set\)/],
        [`Token ${INGEST_TOKEN}`, 'plugin-trino', /^event\.sourceId "plugin-trino" is not bound to principal "ingest"/],
        ['AccessKey AKIDFLINK:flink-secret', 'plugin-trino', /^event\.sourceId "plugin-trino" is not bound to principal "AKIDFLINK": it may send only "plugin-flink"/],
        [`Bearer ${jwt}`, 'plugin-trino', /^event\.sourceId "plugin-trino" is not bound to principal "dana"/],
        [`Token ${SPARK}`, 'Plugin-Trino', /^event\.sourceId "Plugin-Trino" is not bound to principal "spark-writer"/],
        [`Token ${SPARK}`, 'plugin\u2011trino', /^event\.sourceId "plugin\u2011trino" is not bound/],
        [`Token ${SPARK}`, 'plugin-trino\u200b', /^event\.sourceId "plugin-trino\u200b" is not bound/],
        [`Token ${SPARK}`, ' plugin-trino', /^event\.sourceId " plugin-trino" is not bound/],
        [`Token ${SPARK}`, 'brand-new', /^event\.sourceId "brand-new" is not bound/],
      ];
      for (const [authorization, sourceId, message] of attempts) {
        const res = await post(t, event({ eventId: `x-${sourceId}`, sourceId, sourceSeq: 3 }), authorization);
        expect({ authorization, sourceId, status: res.status, code: res.json.code }).toEqual({ authorization, sourceId, status: 403, code: 'AUDIT_SOURCE_NOT_BOUND' });
        expect(res.json.error).toMatch(message);
      }

      // Nothing of any refused request was stored; the ledger did not move.
      expect(await clientEvents(t)).toEqual(storedBefore);
      expect(await ledgerOf(t, 'plugin-trino')).toEqual(before);
      expect(await ledgerOf(t, 'plugin-spark')).toMatchObject({ sources: [] });

      // Each refusal is a recorded DENY naming the principal, the sourceId and the client.
      const denialsOf = async () => (await t.stored()).filter((e) => e.source === 'auditlake' && e.decision === 'DENY' && e.action === 'audit:Ingest');
      await expect.poll(async () => (await denialsOf()).length).toBe(attempts.length + 1);
      const denials = await denialsOf();
      expect(denials.find((e) => e.userId === 'spark-writer' && e.details.includes('"plugin-trino" is not bound'))).toMatchObject({ resource: 'POST /v1/api/audit' });
      expect(denials.every((e) => /client 127\.0\.0\.1/.test(e.details))).toBe(true);

      // The bound principals still work; events without a sourceId are anyone's.
      expect((await post(t, event({ eventId: 't3', sourceId: 'plugin-trino', sourceSeq: 3 }), `Token ${TRINO}`)).status).toBe(200);
      expect((await post(t, event({ eventId: 's1', sourceId: 'plugin-spark-2', sourceSeq: 1 }), `Token ${SPARK}`)).status).toBe(200);
      expect((await post(t, event({ eventId: 'f1', sourceId: 'plugin-flink', sourceSeq: 1 }), 'AccessKey AKIDFLINK:flink-secret')).status).toBe(200);
      expect((await post(t, event({ eventId: 'plain' }), `Token ${INGEST_TOKEN}`)).status).toBe(200);
      expect(await ledgerOf(t, 'plugin-trino')).toMatchObject({ sources: [{ sourceId: 'plugin-trino', received: 4, contiguousThrough: 4, gaps: [], missing: 0 }] });
    });
  }

  it('leaves sourceIds unbound when no binding is configured', async () => {
    const t = await startTestNode();
    expect((await t.ingest(event({ eventId: 'a', sourceId: 'any', sourceSeq: 1 }))).status).toBe(200);
    expect((await t.ingest(event({ eventId: 'b', sourceId: 'any', sourceSeq: 2 }), ADMIN_TOKEN)).status).toBe(200);
  });
});
