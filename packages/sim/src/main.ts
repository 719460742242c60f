#!/usr/bin/env node
// `npm run sim -- --seeds N`: runs N seeded simulations (and the scenarios) and prints the failing seeds.
import { parseArgs } from 'node:util';
import { runSeed, type RunResult } from './run-seed.js';
import { SCENARIOS } from './scenarios.js';

const USAGE = `usage: npm run sim -- [--seeds N] [--from S] [--seed S] [--size 3-5] [--fault-ms MS] [--scenarios] [--verbose]
  --seeds N      run N seeds, from --from (default 1)
  --seed S       run only seed S and print its report (replays a failure exactly)
  --size N       nodes per run (default: 3-5, chosen by the seed)
  --fault-ms MS  virtual ms of ingest under faults per run (default 20000)
  --scenarios    also run the scripted reproductions`;

function report(label: string, result: RunResult, verbose: boolean): void {
  const summary = `${result.size} nodes, ${result.acked} acked (${result.ackedReplicated} ack=replicated), ${result.steps} steps, ${Math.round(result.virtualMs / 1000)} virtual s, trace ${result.trace}`;
  if (result.violations.length === 0) {
    console.log(`${label}: ok (${summary})`);
    return;
  }
  console.log(`${label}: FAILED (${summary})`);
  for (const violation of result.violations) console.log(`  ${violation}`);
  if (verbose && result.diagnostics) console.log(result.diagnostics);
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      seeds: { type: 'string' },
      from: { type: 'string' },
      seed: { type: 'string' },
      size: { type: 'string' },
      'fault-ms': { type: 'string' },
      scenarios: { type: 'boolean' },
      verbose: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const number = (text: string | undefined, name: string): number | undefined => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isSafeInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${text}\n${USAGE}`);
    return n;
  };
  const size = number(values.size, 'size');
  const faultMs = number(values['fault-ms'], 'fault-ms');
  const seeds = values.seed !== undefined ? [number(values.seed, 'seed') as number] : Array.from({ length: number(values.seeds, 'seeds') ?? 10 }, (_, i) => (number(values.from, 'from') ?? 1) + i);
  const verbose = values.verbose === true || values.seed !== undefined;
  const failing: string[] = [];
  if (values.scenarios) {
    for (const scenario of SCENARIOS) {
      const result = await scenario.run();
      report(`scenario "${scenario.name}"`, result, verbose);
      if (result.violations.length > 0) failing.push(`scenario "${scenario.name}"`);
    }
  }
  for (const seed of seeds) {
    const result = await runSeed({ seed, ...(size !== undefined ? { size } : {}), ...(faultMs !== undefined ? { faultMs } : {}) });
    report(`seed ${seed}`, result, verbose);
    if (result.violations.length > 0) failing.push(String(seed));
  }
  console.log(failing.length === 0 ? `all ${seeds.length} seeds passed` : `failing: ${failing.join(' ')} (replay one with: npm run sim -- --seed <S>)`);
  return failing.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(2);
  },
);
