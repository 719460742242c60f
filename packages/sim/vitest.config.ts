// The simulator needs native I/O to complete in the order it was issued: one libuv thread.
// Set here, in the process that forks the test workers, so each worker starts with it.
import { defineConfig, mergeConfig } from 'vitest/config';
import shared from '../../vitest.shared.js';

process.env['UV_THREADPOOL_SIZE'] = '1';

export default mergeConfig(shared, defineConfig({ test: { pool: 'forks', testTimeout: 600_000 } }));
