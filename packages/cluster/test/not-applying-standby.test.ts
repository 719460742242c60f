// Goal: a leader says which standby receives entries and does not apply them. In a rolling
// upgrade, a standby of a version before the leader's record format refused every entry of a new
// leader ("its record_hash does not match its content"), asked for them again for good, and the
// leader's tiering waited for it with nothing saying why (review). The leader now counts a
// standby that asks again from a seq it was already sent entries past, warns once, and names it
// in the hold tiering shows; a standby that applies and moves on, or that long-polls an idle
// log, is never counted.
import { describe, expect, it } from 'vitest';
import { NOT_APPLYING_PULLS } from '../src/replication-tracker.js';
import { leaderWith, openStore } from './leader-log.js';

describe('a standby that does not apply what it is sent', () => {
  it('is warned of once and named in the hold once it asked again from the same seq NOT_APPLYING_PULLS times; it is cleared once it moves on', async () => {
    const { source, tracker, warnings, request } = await leaderWith(6);
    const standby = await openStore();
    // A real refusal: the entry at seq 3 reaches the standby with a changed value, as a record
    // of a format it cannot read does; its chain check refuses the whole batch.
    const damaged = (entries: Uint8Array[]) => entries.map((bytes) => Buffer.from(Buffer.from(bytes).toString('utf8').replace('"userId":"u"', '"userId":"v"')));
    const refusals: string[] = [];
    const pullAndApply = async (damage: boolean) => {
      const answer = await source.pull(request(standby, 's1'));
      try {
        await standby.applyReplicated(damage && standby.position.lastSeq === 2 ? damaged(answer.entries) : answer.entries, answer.termStarts ?? []);
      } catch (err) {
        refusals.push((err as Error).message);
      }
    };
    await pullAndApply(true);
    await pullAndApply(true);
    expect(standby.position.lastSeq).toBe(2);
    for (let i = 0; i < NOT_APPLYING_PULLS + 3; i++) await pullAndApply(true);
    expect(refusals.length).toBe(NOT_APPLYING_PULLS + 4);
    expect(refusals[0]).toMatch(/record_hash does not match its content/);
    expect(warnings).toEqual([{ standby: 's1', seq: 2 }]);
    expect(tracker.notApplying()).toEqual(['s1']);
    // Sent undamaged, it applies them and moves on: no longer counted.
    await pullAndApply(false);
    await pullAndApply(false);
    expect(standby.position.lastSeq).toBe(6);
    expect(tracker.notApplying()).toEqual([]);
  });

  it('never counts a standby that applies each answer, nor one that long-polls a log with nothing new', async () => {
    const { source, tracker, warnings, request } = await leaderWith(5);
    const standby = await openStore();
    for (let i = 0; i < 3 + NOT_APPLYING_PULLS * 2; i++) {
      const answer = await source.pull(request(standby, 's2'));
      if (answer.entries.length > 0) await standby.applyReplicated(answer.entries, answer.termStarts ?? []);
    }
    expect(standby.position.lastSeq).toBe(5);
    expect(tracker.notApplying()).toEqual([]);
    expect(warnings).toEqual([]);
    expect(tracker.progress.find((p) => p.nodeId === 's2')?.repeatedPulls).toBe(0);
  });
});
