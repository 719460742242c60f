// Goal: a table's drill-down lists that table's events only, and says how many of other tables whose names contain it were left out.
import type { EventOutput } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { drillRows, parseFocus } from '../src/drill-down.js';

function event(eventId: string, userId: string, tables: string[]): EventOutput {
  return { eventId, timestamp: 0, userId, source: 'trino', action: 'data:Select', decision: 'ALLOW', resource: '', tables, query: '', details: '' } as unknown as EventOutput;
}

describe('drillRows', () => {
  // What `table=hive.sales.orders` answers: a substring match.
  const answered = [
    event('a', 'ana', ['hive.sales.orders']),
    event('b', 'ana', ['hive.sales.orders_archive']),
    event('c', 'bo', ['xhive.sales.orders.bak']),
    event('d', 'bo', ['hive.sales.items', 'hive.sales.orders']),
    event('e', 'cy', ['HIVE.SALES.ORDERS']),
  ];

  it("keeps a table's own events and counts those of tables whose names only contain it", () => {
    const rows = drillRows({ kind: 'table', name: 'hive.sales.orders' }, answered);
    expect(rows.events.map((e) => e.eventId)).toEqual(['a', 'd']);
    expect(rows.leftOut).toBe(3);
  });

  it('keeps every event of a user or engine: their filters match exactly', () => {
    expect(drillRows({ kind: 'user', name: 'ana' }, answered)).toEqual({ events: answered, leftOut: 0 });
    expect(drillRows({ kind: 'engine', name: 'trino' }, answered)).toEqual({ events: answered, leftOut: 0 });
  });
});

describe('parseFocus', () => {
  it('reads kind:name, a name with colons and new lines included', () => {
    expect(parseFocus('table:hive.sales.orders')).toEqual({ kind: 'table', name: 'hive.sales.orders' });
    expect(parseFocus('user:a:b\nc')).toEqual({ kind: 'user', name: 'a:b\nc' });
    expect(parseFocus('node:x')).toBeUndefined();
    expect(parseFocus(null)).toBeUndefined();
  });
});
