#!/usr/bin/env node
import { runCli } from './cli.js';

runCli(process.argv.slice(2), process.env).then(
  (code) => {
    if (code !== 'running') process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`auditlake: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
