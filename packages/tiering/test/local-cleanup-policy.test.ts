// Goal: the local cleanup policy never puts its cutoff before the epoch: a retention longer than the time since 1970 (36500 days, "keep 100 years") means nothing is old enough, with tiering off or on, and a store pruned by it keeps every event.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultSettings, parseSettings, resolveConfig, type AuditEvent, type EffectiveSettings } from '@auditlake/model';
import { AuditStore, DAY_MS, RetentionPruner } from '@auditlake/store';
import { describe, expect, it, onTestFinished } from 'vitest';
import { localCleanupPolicy, tieredThroughHere } from '../src/index.js';

const NOW = Date.UTC(2026, 0, 1);

function settings(over: Record<string, string>): EffectiveSettings {
  return parseSettings({ ...defaultSettings(resolveConfig()), ...over });
}

function ev(eventId: string, timestamp: number): AuditEvent {
  return { eventId, userId: 'u', source: 'trino', action: 'data:Select', resource: '', decision: '', tables: [], query: '', details: '', timestamp };
}

const TIERED = { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://bucket/audit', 'audit.tier.connectionId': 'c' };

describe('tieredThroughHere', () => {
  // Terms 1 and 2 came from earlier leaders; this node ordered term 3's entries from seq 41.
  const runs = [
    { firstSeq: 1, term: 1 },
    { firstSeq: 30, term: 2 },
    { firstSeq: 41, term: 3 },
  ];
  it('counts entries up to the watermark only in terms the watermark was tiered or vouched for in', () => {
    // Tiered by the leader of term 2 through seq 10,043 (a leader that tiered alone and died):
    // this node's term-3 entries from 41 on are not the tier's, leader or standby.
    expect(tieredThroughHere({ watermarkSeq: 10_043, watermarkTerm: 2, leadingTerm: 3, termStarts: runs })).toBe(40);
    expect(tieredThroughHere({ watermarkSeq: 10_043, watermarkTerm: 2, leadingTerm: undefined, termStarts: runs })).toBe(40);
    expect(tieredThroughHere({ watermarkSeq: 35, watermarkTerm: 2, leadingTerm: 3, termStarts: runs })).toBe(35);
    // Vouched for in term 3 (its sweep found the watermark in its log, or tiered): all of it.
    expect(tieredThroughHere({ watermarkSeq: 500, watermarkTerm: 3, leadingTerm: 3, termStarts: runs })).toBe(500);
    expect(tieredThroughHere({ watermarkSeq: 500, watermarkTerm: 3, leadingTerm: undefined, termStarts: runs })).toBe(500);
    // A single node: term 0 throughout.
    expect(tieredThroughHere({ watermarkSeq: 500, watermarkTerm: 0, leadingTerm: 0, termStarts: [{ firstSeq: 1, term: 0 }] })).toBe(500);
  });
  it('a watermark stored before its term was kept: a leader counts only the entries before its own term, a standby trusts it as far as its log goes', () => {
    expect(tieredThroughHere({ watermarkSeq: 10_043, watermarkTerm: undefined, leadingTerm: 3, termStarts: runs })).toBe(40);
    expect(tieredThroughHere({ watermarkSeq: 10_043, watermarkTerm: undefined, leadingTerm: 4, termStarts: runs })).toBe(10_043);
    expect(tieredThroughHere({ watermarkSeq: 10_043, watermarkTerm: undefined, leadingTerm: undefined, termStarts: runs })).toBe(10_043);
    expect(tieredThroughHere({ watermarkSeq: 500, watermarkTerm: undefined, leadingTerm: 0, termStarts: [{ firstSeq: 1, term: 0 }] })).toBe(0);
  });
});

describe('localCleanupPolicy', () => {
  it('cuts off days before now, as set', () => {
    expect(localCleanupPolicy(settings({ 'audit.retention.days': '30' }), 9, NOW)).toEqual({ cutoffMs: NOW - 30 * DAY_MS });
    expect(localCleanupPolicy(settings({ ...TIERED, 'audit.retention.days': '30', 'audit.tier.retain.local.days': '7' }), 9, NOW)).toEqual({ cutoffMs: NOW - 7 * DAY_MS, maxSeq: 9, tieredOnly: true });
  });

  it('never before the epoch: 36500 days cut off at 0, with tiering off or on', () => {
    expect(localCleanupPolicy(settings({ 'audit.retention.days': '36500' }), 9, NOW)).toEqual({ cutoffMs: 0 });
    expect(localCleanupPolicy(settings({ ...TIERED, 'audit.retention.days': '36500', 'audit.tier.retain.local.days': '36500' }), 9, NOW)).toEqual({ cutoffMs: 0, maxSeq: 9, tieredOnly: true });
    expect(localCleanupPolicy(settings({ 'audit.retention.days': '36500' }), 9, NOW, 5)).toEqual({ cutoffMs: 0, maxSeq: 4 });
  });

  it('a store pruned with a 36500-day retention keeps every event, and the pruner reports no error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'auditlake-cleanup-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const store = await AuditStore.open({ location: join(dir, 'store'), sequencer: () => 1 });
    onTestFinished(() => store.close());
    await store.append([ev('epoch', 0), ev('old', NOW - 40 * 365 * DAY_MS), ev('new', NOW)]);
    const errors: unknown[] = [];
    for (const over of [{}, TIERED]) {
      const current = settings({ ...over, 'audit.retention.days': '36500', 'audit.tier.retain.local.days': '36500' });
      const pruner = new RetentionPruner(store, { intervalMs: 60_000, batchSize: 10, now: () => NOW, policy: (nowMs) => localCleanupPolicy(current, 3, nowMs), onError: (err) => errors.push(err) });
      expect(await pruner.trigger()).toEqual({ deleted: 0, batches: 0 });
      await pruner.close();
    }
    expect(errors).toEqual([]);
    expect((await store.readBySeq(0, 100)).map((e) => e.eventId)).toEqual(['epoch', 'old', 'new']);
  });
});
