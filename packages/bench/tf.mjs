import { runTierFileBench } from './dist/tier-file-bench.js';
const f = await runTierFileBench({ seed: 20250103, events: 5000, repetitions: 15 }, () => {});
const p = (s) => `${s.p50Ms.toFixed(1)} (min ${s.minMs.toFixed(1)})`;
console.log('pool', f.poolThreads, p(f.write), 'one', p(f.writeOneThread), 'duck', p(f.duckWrite), 'bytes', (f.bytes / f.duckBytes).toFixed(3));
