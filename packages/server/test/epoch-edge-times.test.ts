// Goal: events at the epoch's edge (ts 0 and 1, the last millisecond of day 0, the first of day 1)
// are tiered, leave the local store, and are found by search windows, bare
// dates and cursor paging in both modes; a re-send of them is a duplicate of the tiered copy.
// (Written by a review of clocks and time; it held.)
import { describe, expect, it } from 'vitest';
import { FAST_TIERING, externalS3, postSettings, waitUntilTiered } from './tier-helpers.js';
import { event, startTestNode } from './test-node.js';

const DAY = 86_400_000;

const MODES: Array<[string, Record<string, unknown>]> = [
  ['parquet', { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://ext/audit', 'audit.tier.connectionId': 'ext' }],
  ['iceberg', { 'audit.tier.mode': 'iceberg', 'audit.tier.iceberg.table': 'ice.ops.audit_events' }],
];

describe('event times at the epoch', () => {
  for (const [mode, target] of MODES) {
    it(`${mode}: ts 0, 1, DAY-1, DAY are tiered, pruned locally and found by windows`, async () => {
      const s3 = await externalS3();
      const t = await startTestNode({
        props: { ...FAST_TIERING, ...s3.props('ext'), 'auditlake.iceberg.catalogs.ice.warehouse': 's3://ext/warehouse', 'auditlake.iceberg.catalogs.ice.connectionId': 'ext', 'auditlake.audit.retention.interval.ms': '100' },
      });
      const times: Record<string, number> = { e0: 0, e1: 1, eEnd: DAY - 1, eDay1: DAY };
      expect((await postSettings(t, { ...target, 'audit.tier.retain.local.days': 0 })).status).toBe(200);
      const answer = await t.ingest(Object.entries(times).map(([eventId, ts]) => event({ eventId, ts })));
      expect(answer.status).toBe(200);
      await waitUntilTiered(t);
      await expect.poll(async () => (await t.stored()).filter((e) => e.eventId in times).length, { timeout: 10_000 }).toBe(0);
      const ids = async (query: string) => {
        const res = await t.search(query);
        expect(res.status, JSON.stringify(res.json)).toBe(200);
        return res.json.events.map((e) => e.eventId).filter((id) => id in times);
      };
      expect(await ids('?limit=1000')).toEqual(['eDay1', 'eEnd', 'e1', 'e0']);
      expect(await ids('?from=0&to=0')).toEqual(['e0']);
      expect(await ids('?from=1970-01-01&to=1970-01-01')).toEqual(['eEnd', 'e1', 'e0']);
      expect(await ids('?from=1970-01-02&to=1970-01-02')).toEqual(['eDay1']);
      expect(await ids(`?to=${DAY - 1}`)).toEqual(['eEnd', 'e1', 'e0']);
      // Paging through them one at a time with the cursor.
      const paged: string[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 10; i++) {
        const res = await t.request(`/admin/audit?to=${DAY}&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
        const json = (await res.json()) as { events: Array<{ eventId: string }>; nextCursor?: string };
        paged.push(...json.events.map((e) => e.eventId));
        cursor = json.nextCursor;
        if (!cursor) break;
      }
      expect(paged).toEqual(['eDay1', 'eEnd', 'e1', 'e0']);
      // A re-send of the 1970 events (same content) is a duplicate of the tiered copy.
      const again = await t.ingest(Object.entries(times).map(([eventId, ts]) => event({ eventId, ts })));
      expect(again.json).toMatchObject({ ingested: 4, duplicates: 4 });
    });
  }
});
