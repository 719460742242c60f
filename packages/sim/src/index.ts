export { runSeed, type RunOptions, type RunResult } from './run-seed.js';
export { SCENARIOS, divergentLogScenario, oldLeaderAckScenario, type Scenario } from './scenarios.js';
export { SimCluster } from './sim-cluster.js';
