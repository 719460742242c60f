// Goal: packages import each other only along the edges docs/architecture.md allows.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');

/** docs/architecture.md, "Packages": who may import whom. */
const ALLOWED: Record<string, string[] | 'any'> = {
  model: [],
  // Worker threads by job id: generic, so the packages that compute on other cores share one.
  'worker-pool': [],
  // The embedded S3 endpoint stands alone: the server starts it, tests and benches start it too.
  's3-endpoint': [],
  store: ['model', 'integrity'],
  cluster: ['model', 'store'],
  format: ['model', 'worker-pool'],
  integrity: ['model', 'worker-pool'],
  lake: ['model', 'format', 'worker-pool'],
  tiering: ['model', 'store', 'format', 'lake', 'integrity'],
  query: ['model', 'store', 'format', 'lake'],
  // The server serves the UI's built files (it resolves the package; it imports no UI code).
  server: ['model', 'store', 'cluster', 'lake', 'tiering', 'query', 'ui', 's3-endpoint', 'integrity'],
  ui: ['model'],
  cli: ['model', 'server', 'integrity', 'lake', 'format'],
  sim: ['model', 'store', 'cluster'],
  testkit: 'any',
  bench: 'any',
};

/**
 * Edges allowed only as a devDependency, for a package's own tests: never imported from its
 * sources. Lake's, tiering's and the CLI's tests run against the same S3 endpoint a node embeds.
 */
const TEST_ONLY: Record<string, string[]> = {
  lake: ['s3-endpoint'],
  tiering: ['s3-endpoint'],
  cli: ['s3-endpoint'],
};

/** Packages that are HTTP servers by nature, besides the server itself and the CLI. */
const SPEAKS_HTTP = ['server', 'cli', 's3-endpoint'];

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && /\.(ts|tsx)$/.test(e.name)).map((e) => join(e.parentPath, e.name));
}

describe('package boundaries', () => {
  it('every workspace import and dependency follows the allowed layout', async () => {
    const packages = (await readdir(join(ROOT, 'packages'), { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
    expect(packages).toContain('model');
    const violations: string[] = [];
    for (const name of packages) {
      const allowed = ALLOWED[name];
      if (allowed === undefined) {
        violations.push(`packages/${name} is not in the layout`);
        continue;
      }
      if (allowed === 'any') continue;
      const pkg = JSON.parse(await readFile(join(ROOT, 'packages', name, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
      const workspace = (deps: Record<string, string> | undefined) => Object.keys(deps ?? {}).filter((d) => d.startsWith('@auditlake/')).map((d) => d.slice('@auditlake/'.length));
      for (const dep of workspace(pkg['dependencies'])) if (!allowed.includes(dep)) violations.push(`packages/${name}/package.json depends on @auditlake/${dep}`);
      for (const dep of workspace(pkg['devDependencies'])) {
        if (!allowed.includes(dep) && !(TEST_ONLY[name] ?? []).includes(dep)) violations.push(`packages/${name}/package.json devDepends on @auditlake/${dep}`);
      }
      for (const file of await sourceFiles(join(ROOT, 'packages', name, 'src'))) {
        const text = await readFile(file, 'utf8');
        for (const m of text.matchAll(/from '@auditlake\/([a-z-]+)'/g)) {
          if (!allowed.includes(m[1]!)) violations.push(`${file.slice(ROOT.length + 1)} imports @auditlake/${m[1]!}`);
        }
        // The UI is bundled for the browser: it may use model's types, never its code.
        if (name === 'ui') for (const m of text.matchAll(/^import (?!type )[^;]*from '@auditlake\/[a-z-]+'/gm)) violations.push(`${file.slice(ROOT.length + 1)} imports workspace code (not only types): ${m[0]}`);
        // Only the server knows HTTP.
        if (!SPEAKS_HTTP.includes(name) && /from '(fastify|node:http)'/.test(text)) violations.push(`${file.slice(ROOT.length + 1)} imports HTTP`);
      }
    }
    expect(violations).toEqual([]);
  });
});
