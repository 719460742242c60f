#!/usr/bin/env node
import { runCli } from './cli.js';

/**
 * An unexpected error's message with those of its causes: LevelDB's "Database failed to open"
 * says why (no space left, a read-only disk, a lock another process holds) only in its cause.
 */
function describe(err: unknown): string {
  const messages: string[] = [];
  for (let at: unknown = err; at !== undefined && messages.length < 8; at = at instanceof Error ? at.cause : undefined) messages.push(at instanceof Error ? at.message : JSON.stringify(at));
  const stack = err instanceof Error ? (err.stack ?? '').split('\n').slice(1).join('\n') : '';
  return messages.join(': ') + (stack === '' ? '' : `\n${stack}`);
}

runCli(process.argv.slice(2), process.env).then(
  (code) => {
    if (code !== 'running') process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`auditlake: ${describe(err)}\n`);
    process.exit(1);
  },
);
