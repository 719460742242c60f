// Goal: for random histories and random single edits, the verifier passes every untouched
// history and fails on every edit (fast-check prints the seed of a failing case to replay it).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChainVerifier, type ChainVerifierOptions, type VerifyRecord } from '../src/index.js';
import { apply, editArb, logArb, makeLog } from './log-edits.js';

function verify(records: readonly VerifyRecord[], options: ChainVerifierOptions): boolean {
  const verifier = new ChainVerifier({ startSeq: 1, ...options });
  for (const record of [...records].sort((a, b) => a.seq - b.seq)) verifier.add(record);
  return verifier.finish().ok;
}

describe('verify (property)', () => {
  it('passes every untouched history and fails on every single edit', () => {
    fc.assert(
      fc.property(logArb, editArb, (spec, edit) => {
        const log = makeLog(spec);
        expect(verify(log.records, { checkpoints: log.checkpoints.map((checkpoint) => ({ checkpoint, where: 'digest' })) })).toBe(true);
        const edited = apply(log, edit);
        expect(verify(edited.records, edited.options)).toBe(false);
      }),
      { numRuns: 400 },
    );
  });
});
