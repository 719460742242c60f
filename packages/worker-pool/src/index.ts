export { WorkerJob, WorkerPool, type JobOutcome, type WorkerPoolErrors, type WorkerPoolOptions, type WorkerResponse } from './worker-pool.js';
