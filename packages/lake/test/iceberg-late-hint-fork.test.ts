// Goal: a deposed leader whose version-hint write lands late (after the new leader committed and metadata cleanup deleted old versions) cannot fork the table: its next commit, built on the version it kept, recreates a deleted version number, finds its base gone, deletes that version again and is refused, so loaders and an independent reader (icebird) keep the new leader's head and every event it committed.
import { icebergRead } from 'icebird';
import { describe, expect, it, onTestFinished } from 'vitest';
import { routeAwsS3To, twoDayEvents, useEmbeddedS3 } from '../src/testing/index.js';
import { parseTableMetadata } from '@auditlake/format';
import { cleanIcebergMetadata, commitIcebergBatch, ensureIcebergTable, ensureNamespace, loadIcebergTable, metadataVersionKey, resolveIcebergTable, tableWatermark, versionHintKey, type ObjectStore } from '../src/index.js';

const BUCKET = 'latehint';
const T0 = Date.UTC(2026, 4, 1);
const CREDENTIALS = { accessKeyId: 'ALLATEHINTFORK000001', secretAccessKey: 'late-hint-fork-secret-0123456789abcdef' };
const s3 = useEmbeddedS3('late-hint-fork-', BUCKET, CREDENTIALS);
const events = (from: number, to: number) => twoDayEvents(T0, from, to - from + 1);

/** `objects`, except that the hint write armed by hold() waits until release() (a writer paused right before it). */
function pausingHintWrites(objects: ObjectStore, hintKey: string) {
  let armed = false;
  let release: (() => void) | undefined;
  const store = new Proxy(objects, {
    get(target, prop) {
      if (prop === 'put') {
        return async (key: string, body: Uint8Array | string, contentType?: string) => {
          if (armed && key === hintKey) {
            armed = false;
            await new Promise<void>((resolve) => (release = resolve));
          }
          return target.put(key, body, contentType);
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store, hold: () => void (armed = true), held: () => release !== undefined, release: () => release?.() };
}

describe('a deposed leader’s late version-hint write', () => {
  it('does not let its next commit fork the table: refused, the recreated version deleted again, every event of the new leader still read', async () => {
    const ref = resolveIcebergTable('cat.ops.t', new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
    const objects = s3.connections.bucket('s3', BUCKET);
    await ensureNamespace(s3.connections, ref);
    await ensureIcebergTable(objects, ref, T0);
    const hintKey = versionHintKey(ref);
    const hintText = async () => new TextDecoder().decode(await objects.get(hintKey)).trim();
    const a = pausingHintWrites(objects, hintKey);
    const asA = { term: 1, nowMs: Date.now(), writerId: 'auditlake:cat.ops.t', mayCommit: () => true };
    const first = await commitIcebergBatch(a.store, ref, (await loadIcebergTable(objects, ref))!, events(1, 10), asA);
    // A commits v3 and pauses right before its hint write.
    a.hold();
    const second = commitIcebergBatch(a.store, ref, first.loaded, events(11, 20), { ...asA, afterSeq: 10 });
    while (!a.held()) await new Promise((resolve) => setTimeout(resolve, 10));
    // B leads meanwhile: commits v4..v9, and metadata cleanup commits v10 and deletes v1..v7.
    const asB = { term: 2, nowMs: Date.now(), writerId: 'auditlake:cat.ops.t', mayCommit: () => true, metadataLogEntriesMax: 2 };
    let b = (await loadIcebergTable(objects, ref))!;
    for (let k = 0; k < 6; k++) b = (await commitIcebergBatch(objects, ref, b, events(21 + 10 * k, 30 + 10 * k), { ...asB, afterSeq: 20 + 10 * k })).loaded;
    b = (await cleanIcebergMetadata({ objects, table: ref, fence: { term: 2, mayCommit: () => true }, now: Date.now, metadataLogEntriesMax: 2 }, b)).loaded;
    expect(b.version).toBe(10);
    expect(await objects.exists(metadataVersionKey(ref, 4))).toBe(false);
    // A resumes: its hint write lands, naming the deleted v3; its v3 commit was real (B built on it).
    a.release();
    const kept = await second;
    expect(kept.version).toBe(3);
    expect(await hintText()).toBe('3');
    // A's next commit, on the v3 it kept, creates the deleted v4 anew: refused, and v4 is gone again.
    await expect(commitIcebergBatch(a.store, ref, kept.loaded, events(21, 30), { ...asA, afterSeq: 20 })).rejects.toMatchObject({
      code: 'AUDIT_OBJECT_EXISTS',
      message: expect.stringContaining('its base v3 was deleted: the table had moved past it'),
    });
    expect(await objects.exists(metadataVersionKey(ref, 4))).toBe(false);
    // Loaders read past the hint naming a deleted version to B's head; B commits on it.
    const loaded = (await loadIcebergTable(objects, ref))!;
    expect({ version: loaded.version, watermark: tableWatermark(loaded)?.seq }).toEqual({ version: 10, watermark: 80 });
    const next = await commitIcebergBatch(objects, ref, loaded, events(81, 90), { ...asB, afterSeq: 80 });
    expect(next.version).toBe(11);
    onTestFinished(routeAwsS3To(s3.server.url, CREDENTIALS));
    const rows = (await icebergRead({ tableUrl: ref.location })) as Array<{ event_id: unknown }>;
    expect(new Set(rows.map((row) => String(row.event_id))).size).toBe(90);
  }, 60_000);
});

describe('a commit another engine commits on while it checks', () => {
  it.each(['base deleted', 'hint moved'] as const)('is not taken for a fork (%s): the successor built on it is found, the commit stands and its version stays', async (how) => {
    const ref = resolveIcebergTable(`cat.ops.u_${how === 'hint moved' ? 'hint' : 'base'}`, new Map([['cat', { name: 'cat', warehouse: `s3://${BUCKET}/wh`, connectionId: 's3' }]]));
    const objects = s3.connections.bucket('s3', BUCKET);
    await ensureNamespace(s3.connections, ref);
    await ensureIcebergTable(objects, ref, T0);
    const ctx = { term: 1, nowMs: Date.now(), writerId: 'auditlake:cat.ops.u', mayCommit: () => true };
    const first = await commitIcebergBatch(objects, ref, (await loadIcebergTable(objects, ref))!, events(1, 10), ctx);
    const base = first.version;
    // While our commit of v(base+1) looks for its base (or reads the hint), another engine commits
    // v(base+2) on it, moving the hint, and deletes the base (Spark's delete-after-commit): the look
    // for v(base+2) had already answered.
    let armed = true;
    const otherCommitsOnOurs = async (target: ObjectStore) => {
      armed = false;
      const ours = new TextDecoder().decode(await target.get(metadataVersionKey(ref, base + 1)));
      const loadedOurs = { version: base + 1, metadata: parseTableMetadata(ours), metadataPath: target.url(metadataVersionKey(ref, base + 1)) };
      await commitIcebergBatch(target, ref, loadedOurs, events(21, 30), { ...ctx, term: 2, afterSeq: 20 });
      if (how === 'base deleted') await target.delete(metadataVersionKey(ref, base));
    };
    const racing = new Proxy(objects, {
      get(target, prop) {
        if (prop === 'exists' && how === 'base deleted') {
          return async (key: string) => {
            if (armed && key === metadataVersionKey(ref, base)) await otherCommitsOnOurs(target);
            return target.exists(key);
          };
        }
        if (prop === 'find' && how === 'hint moved') {
          return async (key: string) => {
            if (armed && key === versionHintKey(ref)) await otherCommitsOnOurs(target);
            return target.find(key);
          };
        }
        const value = Reflect.get(target, prop, target) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const ours = await commitIcebergBatch(racing, ref, first.loaded, events(11, 20), { ...ctx, afterSeq: 10 });
    expect(armed).toBe(false);
    expect(ours.version).toBe(base + 1);
    expect(await objects.exists(metadataVersionKey(ref, base + 1))).toBe(true);
    const loaded = (await loadIcebergTable(objects, ref))!;
    expect({ version: loaded.version, watermark: tableWatermark(loaded)?.seq }).toEqual({ version: base + 2, watermark: 30 });
  }, 60_000);
});
