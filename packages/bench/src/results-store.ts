import { readFile } from 'node:fs/promises';
import type { BenchResults } from './bench-report.js';

/**
 * The report carries its figures as JSON in a trailing HTML comment, so a run of one part
 * (`BENCH_ONLY=cluster`) can rewrite the whole file and keep the other parts' figures, each
 * still labelled with the run that measured it.
 */
const OPEN = '<!-- bench-results-json';
const CLOSE = '-->';
const VERSION = 1;

export function embedResults(results: BenchResults): string {
  // "--" cannot appear inside an HTML comment; \u002d is the same character to JSON.parse.
  const json = JSON.stringify({ version: VERSION, ...results }).replaceAll('--', '-\\u002d');
  return `${OPEN}\n${json}\n${CLOSE}\n`;
}

/** The figures stored in an earlier report at `path`, or undefined (no file, an older report without them). */
export async function readStoredResults(path: string): Promise<BenchResults | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
  const start = text.lastIndexOf(OPEN);
  if (start < 0) return undefined;
  const end = text.indexOf(CLOSE, start + OPEN.length);
  if (end < 0) return undefined;
  const parsed = JSON.parse(text.slice(start + OPEN.length, end)) as BenchResults & { version?: number };
  if (parsed.version !== VERSION) return undefined;
  return { ingest: parsed.ingest, search: parsed.search, cluster: parsed.cluster, tiering: parsed.tiering, growth: parsed.growth, soak: parsed.soak, postgres: parsed.postgres, integrity: parsed.integrity };
}
