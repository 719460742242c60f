// What salted field hashes (content format v3, docs/integrity.md) cost ingest per event: the
// content part of a record hashed as v2 and as v3 (key drawn included), in alternating rounds
// so a loaded machine slows both alike. Run: `npm run build && node packages/bench/dist/content-hash-bench.js`.
import { newSaltKey, RecordHasher, type ContentValues } from '@auditlake/integrity';

const EVENTS = 50_000;
const ROUNDS = 30;

/** A skewed, realistic mix: a few hundred users and resources, a new query per event. */
function events(): ContentValues[] {
  const users = Array.from({ length: 200 }, (_, i) => `user.${i}`);
  const resources = Array.from({ length: 300 }, (_, i) => `hive.db${i % 17}.table_${i}`);
  return Array.from({ length: EVENTS }, (_, i) => {
    const resource = resources[(i * 7) % resources.length] as string;
    return {
      eventId: `0194${i.toString(16).padStart(8, '0')}-7c00-7c43-9069-c43a8c3b7cf3`,
      userId: users[i % users.length] as string,
      source: 'trino',
      action: 'data:Select',
      resource,
      decision: i % 10 === 0 ? 'DENY' : 'ALLOW',
      tables: [resource],
      query: `SELECT * FROM ${resource} WHERE id = ${i}`,
      details: `queryId=2025_${i} client=cli`,
      timestamp: 1_735_689_600_000 + i,
    };
  });
}

/** µs per event of one pass. */
function pass(values: readonly ContentValues[], hash: (event: ContentValues) => string): number {
  let length = 0;
  const start = process.hrtime.bigint();
  for (const event of values) length += hash(event).length;
  const perEvent = Number(process.hrtime.bigint() - start) / values.length / 1000;
  if (length === 0) throw new Error('nothing hashed');
  return perEvent;
}

function median(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
}

const values = events();
const v2 = new RecordHasher();
const v3 = new RecordHasher();
const unsalted = (event: ContentValues) => v2.contentOfValues(event).hash;
const salted = (event: ContentValues) => v3.contentOfValues(event, newSaltKey()).hash;
for (let i = 0; i < 3; i++) {
  pass(values, unsalted);
  pass(values, salted);
}
const a: number[] = [];
const b: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  a.push(pass(values, unsalted));
  b.push(pass(values, salted));
}
const line = (name: string, xs: number[]) => `${name}: best ${Math.min(...xs).toFixed(2)} µs/event, median ${median(xs).toFixed(2)}`;
console.log(line('v2 contentOfValues', a));
console.log(line('v3 contentOfValues, key drawn', b));
console.log(`v3 - v2: ${(Math.min(...b) - Math.min(...a)).toFixed(2)} µs/event (best against best)`);
