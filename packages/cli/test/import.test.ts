// Goal: each format's fixture (every record type and outcome its documentation shows, and malformed lines) imports through a real node with the documented mapping, once.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { EventOutput } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { JsonFraming, quoteUnsafeIntegers } from '../src/json-framing.js';
import { allEvents, FIXTURES, ingest, runImport, startNode, tempDir } from './import-node.js';

interface Expected {
  events: Array<{
    at: string;
    userId: string;
    action: string;
    resource: string;
    decision: string;
    tables: string[];
    time: string;
    redacted?: number;
    identifierType?: string;
    details?: Record<string, unknown>;
  }>;
  refused: string[];
  skipped: number;
  duplicates: number;
}

async function expected(format: string): Promise<Expected> {
  return JSON.parse(await readFile(join(FIXTURES, format, 'expected.json'), 'utf8')) as Expected;
}

/** The fixture's records by `file:line` (JSON records by the line they start on). */
async function sourceRecords(format: string, files: string[]): Promise<Map<string, unknown>> {
  const records = new Map<string, unknown>();
  for (const file of files) {
    const bytes = await readFile(join(FIXTURES, format, 'logs', file));
    const text = (file.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8');
    const framing = new JsonFraming();
    text.split('\n').forEach((line, i) => {
      for (const piece of framing.push(line, i + 1)) {
        if (piece.kind === 'record') {
          try {
            records.set(`${file}:${piece.line}`, JSON.parse(quoteUnsafeIntegers(piece.text)));
          } catch {
            // malformed on purpose
          }
        }
      }
    });
  }
  return records;
}

/** Fields copied verbatim into a column, which `details` leaves out: everything else must be there, unchanged. */
const COPIED: Record<string, string[]> = {
  gravitino: ['timestamp', 'user', 'operationType', 'identifier'],
  lakekeeper: ['time'],
  lho: ['timestamp', 'userName', 'action', 'resourceUri'],
  las: ['event_time', 'user_id', 'event_name', 'identifier'],
};

function key(e: { userId: string; action: string; resource: string; timestamp: number }): string {
  return `${e.userId}|${e.action}|${e.resource}|${e.timestamp}`;
}

/** How a stored event differs from what a fixture record must become (empty: it is that record's event). */
function mismatch(w: Expected['events'][number], event: EventOutput, record: unknown, copied: readonly string[]): string[] {
  const problems: string[] = [];
  const want = { userId: w.userId, action: w.action, resource: w.resource, timestamp: Date.parse(w.time), source: event.source, decision: w.decision, tables: w.tables, query: '', redacted: w.redacted };
  const got = { userId: event.userId, action: event.action, resource: event.resource, timestamp: event.timestamp, source: event.source, decision: event.decision, tables: event.tables, query: event.query, redacted: event.redacted };
  for (const field of Object.keys(want) as Array<keyof typeof want>) {
    if (JSON.stringify(want[field]) !== JSON.stringify(got[field])) problems.push(`${field} ${JSON.stringify(got[field])} is not ${JSON.stringify(want[field])}`);
  }
  const details = JSON.parse(event.details) as Record<string, unknown>;
  if (w.details && JSON.stringify(details) !== JSON.stringify(w.details)) problems.push(`details ${event.details}`);
  if (w.identifierType && details['identifier_type'] !== w.identifierType) problems.push(`identifier_type ${String(details['identifier_type'])}`);
  if (record !== undefined && w.redacted === undefined) {
    // Nothing is lost: every field not copied into a column is in details as it was.
    for (const [field, value] of Object.entries(record as Record<string, unknown>)) {
      if (!copied.includes(field) && JSON.stringify(details[field]) !== JSON.stringify(value)) problems.push(`details.${field} ${JSON.stringify(details[field])}`);
    }
  }
  return problems;
}

describe.each([
  ['gravitino', ['pod-a/gravitino_audit.log']],
  ['lakekeeper', ['lakekeeper.log', 'lakekeeper-doc-examples.json']],
  ['lho', ['clo-audit.log.42']],
  ['las', ['las-audit-2023-01-01.json']],
])('import --format %s', (format, files) => {
  it('stores every record once with the documented mapping, reports each malformed one by file:line, and exits 3', async () => {
    const node = await startNode();
    const want = await expected(format);
    const run = await runImport(node, ['--format', format, join(FIXTURES, format, 'logs')]);
    expect(run.stdout).toBe(`imported ${want.events.length}, duplicates ${want.duplicates}, refused ${want.refused.length}\n`);
    expect(run.code).toBe(3);
    for (const at of want.refused) expect(run.stderr).toContain(`${join(FIXTURES, format, 'logs', at)}: `);
    expect(run.stderr.split('\n').filter((l) => l.startsWith('/')).length).toBe(want.refused.length);
    if (want.skipped > 0) expect(run.stderr).toContain(`skipped ${want.skipped} lines or records that are not audit records`);

    const stored = await allEvents(node, `&engine=${format}`);
    expect(stored).toHaveLength(want.events.length);
    expect(new Set(stored.map((e) => e.eventId)).size).toBe(stored.length);
    const records = await sourceRecords(format, files);
    // Each expected event claims one stored event that matches it in every respect.
    const unclaimed = [...stored];
    for (const w of want.events) {
      const mismatches: string[] = [];
      const index = unclaimed.findIndex((event) => {
        const problems = mismatch(w, event, records.get(w.at), COPIED[format] ?? []);
        if (problems.length > 0 && key(event) === key({ ...w, timestamp: Date.parse(w.time) })) mismatches.push(problems.join('; '));
        return problems.length === 0;
      });
      expect(index, `${w.at}: no stored event matches (${mismatches.join(' | ') || 'none with its user, action, resource and time'})`).not.toBe(-1);
      unclaimed.splice(index, 1);
    }
    expect(unclaimed).toEqual([]);
    for (const e of stored) expect(e.eventId).toMatch(new RegExp(`^${format}-[0-9a-f]{32}$`));
  });

  it('stores nothing new when the same files are imported again', async () => {
    const node = await startNode();
    const want = await expected(format);
    await runImport(node, ['--format', format, join(FIXTURES, format, 'logs')]);
    const before = await allEvents(node);
    const again = await runImport(node, ['--format', format, join(FIXTURES, format, 'logs')]);
    expect(again.stdout).toBe(`imported 0, duplicates ${want.events.length + want.duplicates}, refused ${want.refused.length}\n`);
    const after = await allEvents(node);
    expect(after.map((e) => e.eventId).sort()).toEqual(before.map((e) => e.eventId).sort());
  });
});

describe('an import whose eventIds hold other events on the node', () => {
  it('counts them as conflicts and as refused records (exit 3), each reported by its line, not as imported or duplicates', async () => {
    const format = 'las';
    const want = await expected(format);
    const first = await startNode();
    await runImport(first, ['--format', format, join(FIXTURES, format, 'logs')]);
    const [taken] = await allEvents(first);
    // Another node where someone sent an event under one of the ids the import will use.
    const node = await startNode();
    await ingest(node, [{ eventId: taken!.eventId, source: 'squatter', userId: 'mallory', action: 'data:Select', ts: 1_700_000_000_000 }]);
    const run = await runImport(node, ['--format', format, join(FIXTURES, format, 'logs')]);
    expect(run.stdout).toBe(`imported ${want.events.length - 1}, duplicates ${want.duplicates}, conflicts 1, refused ${want.refused.length + 1}\n`);
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(new RegExp(`^/.*:\\d+: refused by the node as an eventId conflict: eventId ${taken!.eventId} holds an event with other content there`, 'm'));
    expect(run.stderr).toContain(`1 of the ${want.refused.length + 1} refused records was an eventId conflict`);
    expect((await allEvents(node)).filter((e) => e.eventId === taken!.eventId)).toMatchObject([{ userId: 'mallory' }]);
  });

  it('refuses a Gravitino text file imported again with another --time-zone: its ids hash the line, not the time (exit 3)', async () => {
    const node = await startNode();
    const dir = await tempDir();
    const file = join(dir, 'gravitino_audit.log');
    await writeFile(file, '[2026-12-01 09:00:00.000]\talice\tLOAD_TABLE\tml.cat.s.t1\tSUCCESS\tHTTP\t10.0.0.1\t{http.status=200}\n');
    const utc = await runImport(node, ['--format', 'gravitino', '--time-zone', 'UTC', file]);
    expect(utc.stdout).toBe('imported 1, duplicates 0, refused 0\n');
    const shanghai = await runImport(node, ['--format', 'gravitino', '--time-zone', '+08:00', file]);
    expect(shanghai.stdout).toBe('imported 0, duplicates 0, conflicts 1, refused 1\n');
    expect(shanghai.code).toBe(3);
    expect(shanghai.stderr).toContain(`${file}:1: refused by the node as an eventId conflict`);
    expect(await allEvents(node, '&engine=gravitino')).toMatchObject([{ timestamp: Date.parse('2026-12-01T09:00:00Z') }]);
  });
});
