// Goal: real cluster nodes under seeded, overlapping faults never lose an acknowledged event, end with one log, and answer ack=replicated only with another node holding the events; both known reproductions stay fixed; a seed replays exactly.
import { describe, expect, it } from 'vitest';
import { SCENARIOS, runSeed, type RunResult } from '../src/index.js';

/** Seeds `npm test` runs (more with AUDITLAKE_SIM_SEEDS, or `npm run sim -- --seeds N`). */
const SEEDS = Number(process.env['AUDITLAKE_SIM_SEEDS'] ?? 16);

function failures(result: RunResult): string {
  return result.violations.length === 0 ? '' : `seed ${result.seed} (replay: npm run sim -- --seed ${result.seed}):\n${result.violations.join('\n')}\n${result.diagnostics ?? ''}`;
}

describe('cluster simulator', () => {
  it.each(SCENARIOS.map((s) => [s.name, s] as const))('scenario: %s', async (_name, scenario) => {
    const result = await scenario.run();
    expect(failures(result)).toBe('');
    expect(result.acked).toBeGreaterThan(0);
  });

  it(`every property holds for seeds 1–${SEEDS} (3–5 nodes, 20 virtual seconds of faults each)`, async () => {
    const failed: string[] = [];
    for (let seed = 1; seed <= SEEDS; seed++) {
      const result = await runSeed({ seed });
      console.log(`seed ${seed}: ${result.violations.length === 0 ? 'ok' : 'FAILED'} (${result.size} nodes, ${result.acked} acked, ${result.ackedReplicated} with ack=replicated, ${result.steps} steps, trace ${result.trace})`);
      expect(result.acked).toBeGreaterThan(100);
      if (result.violations.length > 0) failed.push(failures(result));
    }
    expect(failed.join('\n\n')).toBe('');
  });

  it('every property holds with node clocks an hour ahead and an hour behind (ingest time never goes back along a log across the failovers between them)', async () => {
    const HOUR_MS = 3_600_000;
    const failed: string[] = [];
    for (const seed of [1, 2, 3]) {
      const result = await runSeed({ seed, size: 3, faultMs: 15_000, clockSkewsMs: [HOUR_MS, -HOUR_MS, 0] });
      expect(result.acked).toBeGreaterThan(50);
      if (result.violations.length > 0) failed.push(failures(result));
    }
    expect(failed.join('\n\n')).toBe('');
  });

  it('replays a seed exactly: the same events at the same virtual times, the same outcome', async () => {
    const first = await runSeed({ seed: 7, faultMs: 8_000 });
    const second = await runSeed({ seed: 7, faultMs: 8_000 });
    expect(second.trace).toBe(first.trace);
    expect({ steps: second.steps, acked: second.acked, virtualMs: second.virtualMs }).toEqual({ steps: first.steps, acked: first.acked, virtualMs: first.virtualMs });
    const other = await runSeed({ seed: 8, faultMs: 8_000 });
    expect(other.trace).not.toBe(first.trace);
  });
});
