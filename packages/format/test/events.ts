// Seeded event builder for the format tests: varied, awkward events, replayable from a seed.
import { seededRandom, type StoredEvent } from '@auditlake/model';
import type { TieredEvent } from '../src/audit-columns.js';

export const DAY_MS = 86_400_000;

/** 2026-03-01T00:00:00Z: a fixed origin so files and assertions are reproducible. */
export const ORIGIN_MS = Date.UTC(2026, 2, 1);

/** The seed of a randomized test: FORMAT_TEST_SEED when set (to replay a failure), else fresh. */
export function testSeed(): number {
  const fromEnv = process.env['FORMAT_TEST_SEED'];
  return fromEnv === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(fromEnv);
}

/** The seeded PRNG the tests draw from (model's mulberry32). */
export { seededRandom };

// Awkward strings: empty, accents, CJK, emoji (supplementary code points order differently in
// UTF-16 than in UTF-8), RTL, a quote, a newline, and U+FFFF next to U+1F600.
const TEXTS = ['', 'héllo wörld', '監査ログ', 'emoji 😀🔒', 'مرحبا', "it's \"quoted\"", 'line1\nline2', '\uFFFF', '\u{1F600}'];
const SOURCES = ['trino', 'spark', 'flink', 'ontul', 'auditlake'];
const ACTIONS = ['data:Select', 'data:Write', 'ddl:Create', 'auth:Login'];
const DECISIONS = ['ALLOW', 'DENY', ''] as const;

export interface EventOptions {
  /** Number of events. */
  count: number;
  /** First event time, epoch ms (default ORIGIN_MS). */
  startMs?: number;
  /** Event times spread evenly over this many ms from startMs (default one day). */
  spanMs?: number;
}

/**
 * `count` events with times spread over [startMs, startMs + spanMs), given in a shuffled order
 * (the writer must sort them), covering every decision, empty and unicode strings, 0..4 tables.
 */
export function buildEvents(seed: number, options: EventOptions): StoredEvent[] {
  const random = seededRandom(seed);
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)] as T;
  const startMs = options.startMs ?? ORIGIN_MS;
  const spanMs = options.spanMs ?? DAY_MS;
  const events: StoredEvent[] = [];
  for (let i = 0; i < options.count; i++) {
    const timestamp = startMs + Math.floor((i * spanMs) / options.count) + Math.floor(random() * 3);
    const tableCount = Math.floor(random() * 5);
    const tables = Array.from({ length: tableCount }, (_, t) => `cat.db${t}.tbl_${Math.floor(random() * 50)}${pick(['', 'é', '表'])}`);
    events.push({
      eventId: `evt-${seed}-${i.toString().padStart(6, '0')}`,
      userId: `user${Math.floor(random() * 20)}${pick(['', '@example.com', 'ü'])}`,
      source: pick(SOURCES),
      action: pick(ACTIONS),
      resource: pick(['', 'cat.db.orders', 'cat.db.secret', pick(TEXTS)]),
      decision: pick(DECISIONS),
      tables,
      query: random() < 0.2 ? '' : `SELECT ${pick(TEXTS)} FROM ${tables[0] ?? 'dual'} WHERE id = ${Math.floor(random() * 1e9)} -- ${pick(TEXTS)}`,
      details: pick(TEXTS),
      timestamp,
      ingestTs: timestamp + Math.floor(random() * 5000),
      seq: i + 1,
      term: 1 + Math.floor(i / 1000),
      // Chain fields as the store keeps them (most records), and the optional source numbering.
      ...(random() < 0.9 ? { recordHash: hex(random, 64), chainHash: hex(random, 64), fieldCheck: hex(random, 56) } : {}),
      ...(random() < 0.3 ? { sourceId: `plugin-${Math.floor(random() * 3)}`, sourceSeq: i } : {}),
      ...(random() < 0.05 ? { erased: { query: hex(random, 64) } } : {}),
      // A record's salt (content format v3): a key K, base64url.
      ...(random() < 0.7 ? { salt: Buffer.from(hex(random, 32), 'hex').toString('base64url') } : {}),
    });
  }
  // Shuffle (Fisher–Yates) so the writer's sort is exercised.
  for (let i = events.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [events[i], events[j]] = [events[j] as StoredEvent, events[i] as StoredEvent];
  }
  return events;
}

function hex(random: () => number, length: number): string {
  let text = '';
  for (let i = 0; i < length; i++) text += Math.floor(random() * 16).toString(16);
  return text;
}

/** What the tiered copy of `events` must read back as: every field, sorted by time (stable). */
export function expectedTiered(events: readonly StoredEvent[]): TieredEvent[] {
  return [...events].sort((a, b) => a.timestamp - b.timestamp);
}
