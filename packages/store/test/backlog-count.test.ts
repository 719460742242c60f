// Goal: countAfter (the tiering backlog) is exact after any mix of appends, prunes (with and without a seq limit), suffix diversions, replicated logs with holes and reopens — checked against a scan of the log.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditEvent } from '@auditlake/model';
import fc from 'fast-check';
import { describe, expect, it, onTestFinished } from 'vitest';
import { AuditStore } from '../src/index.js';

async function location(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'auditlake-backlog-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'store');
}

function ev(eventId: string, timestamp: number): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp };
}

/** What a scan of the seq index says: the truth countAfter must match. */
async function scanned(store: AuditStore, afterSeq: number): Promise<number> {
  return (await store.readBySeq(afterSeq, Number.MAX_SAFE_INTEGER)).length;
}

type Step =
  | { kind: 'append'; count: number; timestamps: number[] }
  | { kind: 'prune'; cutoffMs: number; limitToWatermark: boolean }
  | { kind: 'divert'; back: number }
  | { kind: 'advance'; by: number }
  | { kind: 'reopen' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('append' as const), count: fc.integer({ min: 1, max: 30 }), timestamps: fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 30, maxLength: 30 }) }),
  fc.record({ kind: fc.constant('prune' as const), cutoffMs: fc.integer({ min: 0, max: 1000 }), limitToWatermark: fc.boolean() }),
  fc.record({ kind: fc.constant('divert' as const), back: fc.integer({ min: 0, max: 10 }) }),
  fc.record({ kind: fc.constant('advance' as const), by: fc.integer({ min: 0, max: 25 }) }),
  fc.record({ kind: fc.constant('reopen' as const) }),
);

describe('countAfter', () => {
  it('equals a scan of the log after any sequence of changes', async () => {
    const seed = Number(process.env['BACKLOG_SEED'] ?? Date.now() % 1_000_000);
    console.log(`backlog-count seed ${seed} (BACKLOG_SEED=${seed} replays it)`);
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        const at = await location();
        let store = await AuditStore.open({ location: at });
        let watermark = 0;
        let next = 0;
        try {
          for (const s of steps) {
            if (s.kind === 'append') await store.append(Array.from({ length: s.count }, (_, i) => ev(`e${next++}`, s.timestamps[i] ?? 0)));
            else if (s.kind === 'prune') await store.pruneBefore(s.cutoffMs, 7, async () => true, s.limitToWatermark ? watermark : undefined);
            else if (s.kind === 'divert') await store.divertSuffixToOutbox(Math.max(1, store.position.lastSeq - s.back));
            else if (s.kind === 'advance') watermark = Math.min(store.position.lastSeq, watermark + s.by);
            else {
              await store.close();
              store = await AuditStore.open({ location: at });
            }
            // The watermark (only growing, as the sweep's) and a few other points.
            for (const afterSeq of [watermark, 0, Math.floor(store.position.lastSeq / 2), store.position.lastSeq]) {
              expect(await store.countAfter(afterSeq)).toBe(await scanned(store, afterSeq));
            }
          }
        } finally {
          await store.close();
        }
      }),
      { seed, numRuns: 40 },
    );
  });

  it('stays exact on a standby whose replicated log has holes the leader pruned', async () => {
    const leader = await AuditStore.open({ location: await location() });
    const standby = await AuditStore.open({ location: await location() });
    onTestFinished(async () => {
      await leader.close();
      await standby.close();
    });
    await leader.append(Array.from({ length: 40 }, (_, i) => ev(`e${i}`, i % 2 === 0 ? 10 : 1000)));
    await leader.pruneBefore(100, 100, async () => true);
    expect(await leader.countAfter(0)).toBe(20);
    await standby.applyReplicated(await leader.readEncodedBySeq(0, 1000));
    for (const afterSeq of [0, 5, 17, 39, 40]) expect(await standby.countAfter(afterSeq)).toBe(await scanned(standby, afterSeq));
  });

  it('counts a large contiguous backlog exactly, also after a prune below the watermark', async () => {
    const store = await AuditStore.open({ location: await location() });
    onTestFinished(() => store.close());
    for (let i = 0; i < 20; i++) await store.append(Array.from({ length: 1000 }, (_, j) => ev(`e${i}-${j}`, 5000 + j)));
    expect(await store.countAfter(0)).toBe(20_000);
    expect(await store.countAfter(12_345)).toBe(7_655);
    // A prune of tiered events below the watermark leaves the count above it exact.
    await store.pruneBefore(6000, 1000, async () => true, 10_000);
    expect(await store.countAfter(10_000)).toBe(10_000);
    expect(await store.countAfter(0)).toBe(await scanned(store, 0));
  });
});
