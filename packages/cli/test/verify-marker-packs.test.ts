// Goal: `auditlake verify --path` over a Parquet tier whose commit markers maintenance packed
// (`_auditlake/commit-packs/`, loose copies deleted) verifies as before, reading ~markers/packSize
// objects for the markers instead of every marker, and fails on each edit of a pack: a count
// changed in place or under a matching name, a marker dropped, two packs that disagree.
// VERIFY_PACK_MARKERS sets the markers (the report's timings used 3,000, with VERIFY_PACK_SIZE 50 and 1,000).
import { hash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { COMMITS_DIR, MARKER_PACKS_DIR, ObjectStore, packParquetMarkers, readParquetLog, writeParquetCheckpoint, type CommitMarker, type S3Connections } from '@auditlake/lake';
import type { AuditNode } from '@auditlake/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyHistory } from '../src/verify-command.js';
import { embeddedS3Connections, ingestAll, offlineVerifyOptions, parquetTier, startTieringNode, waitFor } from './verify-node.js';

const ADMIN_TOKEN = 'admin-token-for-marker-pack-tests';
const BUCKET = 'auditlake';
const PREFIX = 'packed';
const TIER_PATH = `s3://${BUCKET}/${PREFIX}`;
const MARKERS = Number(process.env['VERIFY_PACK_MARKERS'] ?? 240);
/** Markers per pack here (maintenance packs 1,000): several packs from a few hundred markers. VERIFY_PACK_SIZE sets it. */
const PACK_SIZE = Number(process.env['VERIFY_PACK_SIZE'] ?? 50);
const location = { bucket: BUCKET, prefix: PREFIX };
const fence = { term: 1, mayCommit: () => true };

let dataDir: string;
let node: AuditNode;
let objects: ObjectStore;
let connections: S3Connections;
let head: number;

const offline = () => offlineVerifyOptions(node, ['--path', TIER_PATH]);

function event(i: number): Record<string, unknown> {
  return { eventId: `mp-${i}`, userId: `user-${i % 3}`, source: 'trino', action: 'data:Select', resource: `hive.sales.t${i}`, decision: 'ALLOW', tables: [`hive.sales.t${i}`], query: `SELECT ${i}`, ts: 1_700_000_000_000 + i * 1000 };
}

/** GETs of commit markers and marker packs while `run` runs (every ObjectStore, verify's own included). */
async function markerGets<T>(run: () => Promise<T>): Promise<{ result: T; markers: number; packs: number; ms: number }> {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called back with its own `this` below
  const original = ObjectStore.prototype.get;
  let markers = 0;
  let packs = 0;
  ObjectStore.prototype.get = function (this: ObjectStore, key: string) {
    if (key.includes(`/${COMMITS_DIR}/`)) markers++;
    if (key.includes(`/${MARKER_PACKS_DIR}/`)) packs++;
    return original.call(this, key);
  };
  const started = performance.now();
  try {
    const result = await run();
    return { result, markers, packs, ms: performance.now() - started };
  } finally {
    ObjectStore.prototype.get = original;
  }
}

/** Every object under the tier prefix, to put back after a tamper (objects added since are deleted). */
async function snapshotTier(): Promise<Map<string, Uint8Array>> {
  const saved = new Map<string, Uint8Array>();
  for (const key of await objects.list(`${PREFIX}/`)) saved.set(key, await objects.get(key));
  return saved;
}

async function restoreTier(saved: Map<string, Uint8Array>): Promise<void> {
  for (const key of await objects.list(`${PREFIX}/`)) if (!saved.has(key)) await objects.delete(key);
  for (const [key, bytes] of saved) await objects.put(key, bytes);
}

type PackEntry = { name: string; marker: string };

/** A pack rewritten with `edit` applied to its markers, renamed to match (range and digest), as a thorough tamperer would. */
async function rewritePack(key: string, edit: (markers: PackEntry[]) => PackEntry[]): Promise<string> {
  const pack = JSON.parse(new TextDecoder().decode(await objects.get(key))) as { format: string; markers: PackEntry[] };
  const markers = edit(pack.markers);
  const body = JSON.stringify({ ...pack, markers });
  const renamed = `${PREFIX}/${MARKER_PACKS_DIR}/${markers[0]?.name.slice(0, 16)}-${markers.at(-1)?.name.slice(0, 16)}-${hash('sha256', body, 'hex').slice(0, 16)}.json`;
  await objects.delete(key);
  await objects.put(renamed, body, 'application/json');
  return renamed;
}

function withRowsChanged(text: string): string {
  const marker = JSON.parse(text) as CommitMarker;
  return JSON.stringify({ ...marker, files: marker.files.map((f, i) => (i === 0 ? { ...f, rows: f.rows + 1 } : f)) });
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'auditlake-verify-packs-'));
  node = await startTieringNode(dataDir, {
    adminToken: ADMIN_TOKEN,
    props: {
      ...parquetTier(TIER_PATH),
      // One marker per event: a long log from a short test.
      'auditlake.audit.tier.batch.size': '1',
      'auditlake.audit.tier.maintenance.enabled': 'false',
    },
  });
  connections = embeddedS3Connections(node);
  objects = connections.bucket('t', BUCKET);
  await node.integrity.registerKey();
  // One event a request: a batch never splits one ingest millisecond, so events ingested together are one commit.
  for (let i = 1; i <= MARKERS; i++) await ingestAll(node, ADMIN_TOKEN, [event(i)]);
  expect(await node.integrity.checkpointNow()).toBeDefined();
  head = node.store.chainHead.seq;
  await waitFor('the whole log tiered', async () => (await node.tiering.watermark()).seq === head, 600_000);
}, 900_000);

afterAll(async () => {
  connections?.close();
  await node?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('verify over packed commit markers', () => {
  let packKeys: string[];
  let packed: Map<string, Uint8Array>;
  let verified: string;

  it(`verifies as before, reading ~${MARKERS}/${PACK_SIZE} objects for the markers instead of ${MARKERS}+`, async () => {
    // The log alone, as verify reads it (every marker), beside the whole verify (every data file too).
    const readLog = () => readParquetLog(objects, location, undefined, { fromCheckpoint: false });
    const looseLog = await markerGets(readLog);
    const loose = await markerGets(() => verifyHistory(offline()));
    expect(loose.result.ok).toBe(true);
    const markerCount = (await objects.list(`${PREFIX}/${COMMITS_DIR}/`)).length;
    // About one a request (two requests in one millisecond share a commit).
    expect(markerCount).toBeGreaterThan(MARKERS / 2);
    expect(loose.markers).toBe(markerCount);

    // A log checkpoint over every marker, then maintenance's packing step twice (an orphan age of
    // 0 here): the first writes the packs, the second deletes the loose copies.
    expect(await writeParquetCheckpoint({ objects, location, fence, now: Date.now }, 1)).toMatchObject({ written: true });
    const limits = { packSize: PACK_SIZE, perRunMax: 1_000_000 };
    const first = await packParquetMarkers({ objects, location, fence, now: Date.now }, 0, limits);
    expect(first.markersPacked).toBe(Math.floor(markerCount / PACK_SIZE) * PACK_SIZE);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await packParquetMarkers({ objects, location, fence, now: Date.now }, 0, limits)).toEqual({ markersPacked: 0, packedMarkersDeleted: first.markersPacked });
    packKeys = await objects.list(`${PREFIX}/${MARKER_PACKS_DIR}/`);
    expect(packKeys).toHaveLength(Math.floor(markerCount / PACK_SIZE));
    const left = (await objects.list(`${PREFIX}/${COMMITS_DIR}/`)).length;
    expect(left).toBe(markerCount % PACK_SIZE);

    const packedLog = await markerGets(readLog);
    expect(packedLog.result.markers.map((m) => JSON.stringify(m))).toEqual(looseLog.result.markers.map((m) => JSON.stringify(m)));
    const afterPacking = await markerGets(() => verifyHistory(offline()));
    expect(afterPacking.result.ok).toBe(true);
    expect(afterPacking.result.message).toBe(loose.result.message);
    expect(afterPacking.packs).toBe(packKeys.length);
    expect(afterPacking.markers).toBe(left);
    console.log(
      `verify --path over ${markerCount} commit markers: ${Math.round(loose.ms)} ms with ${loose.markers} marker GETs loose; ` +
        `${Math.round(afterPacking.ms)} ms with ${afterPacking.packs} pack GETs + ${afterPacking.markers} marker GETs packed (${PACK_SIZE} a pack); ` +
        `its read of the log alone ${Math.round(looseLog.ms)} ms loose, ${Math.round(packedLog.ms)} ms packed`,
    );
    packed = await snapshotTier();
    verified = loose.result.message;
  }, 900_000);

  it("a marker's count changed in a pack in place: refused, naming the pack", async () => {
    const key = packKeys[1] as string;
    try {
      const text = new TextDecoder().decode(await objects.get(key));
      await objects.put(key, text.replace(/\\"rows\\":(\d+)/, (_, n: string) => `\\"rows\\":${Number(n) + 1}`), 'application/json');
      await expect(verifyHistory(offline())).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH', message: expect.stringContaining(objects.url(key)) });
    } finally {
      await restoreTier(packed);
    }
  });

  it("a marker's count changed in a pack renamed to match: the file's rows and the checkpoint disagree with it", async () => {
    try {
      await rewritePack(packKeys[1] as string, (markers) => markers.map((m, i) => (i === 3 ? { ...m, marker: withRowsChanged(m.marker) } : m)));
      await expect(verifyHistory(offline())).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH' });
    } finally {
      await restoreTier(packed);
    }
  });

  it('a marker dropped from a pack (its loose copy gone), renamed to match: verify fails', async () => {
    try {
      await rewritePack(packKeys[1] as string, (markers) => markers.filter((_, i) => i !== 3));
      await expect(verifyHistory(offline())).rejects.toMatchObject({ code: 'AUDIT_INTEGRITY_MISMATCH' });
    } finally {
      await restoreTier(packed);
    }
  });

  it('two packs of one range that disagree on a marker: refused, naming both', async () => {
    const key = packKeys[0] as string;
    try {
      const forged = await rewritePack(key, (markers) => markers.map((m, i) => (i === 0 ? { ...m, marker: withRowsChanged(m.marker) } : m)));
      await objects.put(key, packed.get(key) as Uint8Array, 'application/json');
      const error = await verifyHistory(offline()).then(
        () => undefined,
        (err: unknown) => err as { code: string; message: string },
      );
      expect(error?.code).toBe('AUDIT_INTEGRITY_MISMATCH');
      expect(error?.message).toContain(objects.url(key));
      expect(error?.message).toContain(objects.url(forged));
    } finally {
      await restoreTier(packed);
    }
  });

  it('restored, it verifies again', async () => {
    const report = await verifyHistory(offline());
    expect(report.ok).toBe(true);
    expect(report.message).toBe(verified);
    expect(report.message).toMatch(new RegExp(`^verified ${head} records, seq 1\\.\\.${head}`));
  });
});
