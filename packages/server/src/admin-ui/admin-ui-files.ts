import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { AuditError, AuditErrorCode } from '@auditlake/model';

/** Bytes of one built asset and the type it is served with. */
export interface AdminUiAsset {
  body: Buffer;
  contentType: string;
}

/** The built Admin UI (`@auditlake/ui`'s dist): its one HTML page and its hashed assets. */
export interface AdminUiFiles {
  html: Buffer;
  /** By file name under `/admin/audit/assets/`. */
  assets: ReadonlyMap<string, AdminUiAsset>;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/**
 * Reads the UI the `@auditlake/ui` package built into its `dist/` (a few hundred KB, held in
 * memory: every page view serves the same bytes). Throws a coded error naming the fix when it
 * has not been built.
 */
export function loadAdminUiFiles(): AdminUiFiles {
  const require = createRequire(import.meta.url);
  const dist = join(dirname(require.resolve('@auditlake/ui/package.json')), 'dist');
  let html: Buffer;
  let names: string[];
  try {
    html = readFileSync(join(dist, 'index.html'));
    names = readdirSync(join(dist, 'assets'));
  } catch (cause) {
    throw new AuditError(AuditErrorCode.CONFIG_INVALID, `the Admin UI is not built (${dist} is missing or incomplete); run \`npm run build\` at the repository root`, { cause });
  }
  const assets = new Map<string, AdminUiAsset>();
  for (const name of names) {
    const contentType = CONTENT_TYPES[extname(name)];
    if (contentType !== undefined) assets.set(name, { body: readFileSync(join(dist, 'assets', name)), contentType });
  }
  return { html, assets };
}
