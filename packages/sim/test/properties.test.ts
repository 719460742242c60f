// Goal: the end-of-run checks catch a lost acknowledged event, a log that differs anywhere, an event stored twice, and a log that goes back.
import { describe, expect, it } from 'vitest';
import { checkLogs, type LogEntry } from '../src/properties.js';
import type { Acked } from '../src/workload.js';

const entry = (seq: number, term: number, eventId: string): LogEntry => ({ seq, term, eventId });
const acked = (eventId: string): Acked => ({ eventId, ack: 'local', node: 'n0', atMs: 0 });

describe('checkLogs', () => {
  const good = [entry(1, 1, 'a'), entry(2, 1, 'b'), entry(3, 2, 'c')];

  it('passes identical logs holding every acknowledged event', () => {
    expect(checkLogs(new Map([['n0', good], ['n1', [...good]]]), [acked('a'), acked('c')])).toEqual([]);
  });

  it('reports a lost acknowledged event (property 1)', () => {
    expect(checkLogs(new Map([['n0', good]]), [acked('z')])).toEqual([expect.stringMatching(/^property 1: 1 acknowledged events are in no log: z/)]);
  });

  it('reports logs that differ in an entry’s term or id, or in length (property 2)', () => {
    expect(checkLogs(new Map([['n0', good], ['n1', [entry(1, 1, 'a'), entry(2, 2, 'b'), entry(3, 2, 'c')]]]), [])).toEqual([expect.stringMatching(/^property 2: n1's log differs from n0's at position 2/)]);
    expect(checkLogs(new Map([['n0', good], ['n1', good.slice(0, 2)]]), [])).toEqual([expect.stringMatching(/position 3: nothing where n0 has seq 3/)]);
  });

  it('reports an event stored twice and a log whose terms go back', () => {
    expect(checkLogs(new Map([['n0', [entry(1, 1, 'a'), entry(2, 1, 'a')]]]), [])).toEqual([expect.stringMatching(/eventId a is in the log twice/)]);
    expect(checkLogs(new Map([['n0', [entry(1, 2, 'a'), entry(2, 1, 'b')]]]), [])).toEqual([expect.stringMatching(/goes back at seq 2/)]);
  });
});
