#!/usr/bin/env node
// The `auditlake` command. npm links a workspace's bin when it installs, before anything is
// built, so the bin must be a file that exists in the repository: this one, which runs the
// compiled CLI (dist/, made by `npm run build`) and says so plainly when it is not built yet.
import { access } from 'node:fs/promises';

const built = new URL('../dist/bin.js', import.meta.url);
try {
  await access(built);
} catch {
  process.stderr.write('auditlake: the CLI is not built yet; run `npm run build` at the repository root first\n');
  process.exit(1);
}
await import(built.href);
