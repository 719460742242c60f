// Goal: an erasure names every copy of each event, also one stored while it gathered the copies
// (a re-send without ts after retention deleted the first copy, stored during the seconds the
// tier is read): a second erasure record names it, so no copy keeps the values. Real LevelDB.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ERASED_MARKER, newSaltKey, RecordHasher } from '@auditlake/integrity';
import { encodeEvent, type AuditEvent, type EncodedEvent } from '@auditlake/model';
import { AuditStore } from '@auditlake/store';
import { describe, expect, it, onTestFinished } from 'vitest';
import { eraseFields } from '../src/erasure-service.js';

const OLD_MS = 1_700_000_000_000;
const SECRET = 'erin-secret-user';
const hasher = new RecordHasher();

function ev(eventId: string, overrides: Partial<AuditEvent> = {}): AuditEvent {
  return { eventId, userId: SECRET, source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t1'], query: 'SELECT 1', details: '', timestamp: OLD_MS, ...overrides };
}

/** As ingest encodes it: its content part computed under a key of its own. */
function ingested(event: AuditEvent, timeAssigned = false): EncodedEvent {
  const salt = newSaltKey();
  return { ...encodeEvent(event), chainContent: { ...hasher.contentOfValues(event, salt), salt }, ...(timeAssigned ? { timeAssigned } : {}) };
}

async function openStore(): Promise<AuditStore> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-erasure-service-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const store = await AuditStore.open({ location: join(dir, 'store'), sequencer: () => 1 });
  onTestFinished(() => store.close());
  return store;
}

describe('eraseFields', () => {
  it('names a copy stored while it read the tier in a second erasure record: no copy keeps the value', async () => {
    const store = await openStore();
    await store.appendEncoded([ingested(ev('x'))]);
    const firstSeq = (await store.getByEventId('x'))!.seq;
    // Tiered, then deleted here by retention.
    expect((await store.pruneBefore(OLD_MS + 1, 100, async () => true)).deleted).toBe(1);
    let release!: () => void;
    const tierRead = new Promise<void>((resolve) => (release = resolve));
    let asked = false;
    const findTiered = async (ids: ReadonlySet<string>) => {
      asked = true;
      await tierRead;
      return new Map([...ids].map((id) => [id, [{ seq: firstSeq, source: 'trino', action: 'data:Select' }]]));
    };
    const erasing = eraseFields(store, { eventIds: ['x'], fields: ['userId'] }, 'admin', OLD_MS + 50_000, () => 1, findTiered);
    await expect.poll(() => asked).toBe(true);
    // The source re-sends x without ts while the tier is read: a new copy under a new seq.
    const resent = await store.appendEncoded([ingested(ev('x', { timestamp: OLD_MS + 100_000 }), true)]);
    expect(resent.stored).toHaveLength(1);
    release();
    const result = await erasing;
    expect(result.erased).toBe(2);
    expect(result.erasureSeqs).toHaveLength(2);
    expect((await store.getByEventId('x'))?.userId).toBe(ERASED_MARKER);
    expect((await store.readBySeq(0, 100)).filter((e) => JSON.stringify(e).includes(SECRET))).toEqual([]);
    // The two records name both copies between them.
    const named = (await Promise.all(result.erasureSeqs.map((seq) => store.getBySeq(seq)))).flatMap((e) => (JSON.parse(e!.details) as { records: Array<{ seq: number }> }).records.map((r) => r.seq));
    expect(named.sort((a, b) => a - b)).toEqual([firstSeq, resent.stored[0]!.seq]);
  });

  it('appends one record when nothing was stored meanwhile', async () => {
    const store = await openStore();
    await store.appendEncoded([ingested(ev('y'))]);
    const result = await eraseFields(store, { eventIds: ['y'], fields: ['userId'] }, 'admin', OLD_MS + 50_000, () => 1);
    expect(result).toMatchObject({ erased: 1, fields: ['userId'] });
    expect(result.erasureSeqs).toHaveLength(1);
  });
});
