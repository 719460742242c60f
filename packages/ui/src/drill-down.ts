import type { EventOutput } from '@auditlake/model';
import type { GraphNodeKind } from './graph-layout.js';

/** A graph node drilled down to, as the URL's `focus=kind:name` names it. */
export interface Focus {
  kind: GraphNodeKind;
  name: string;
}

export function parseFocus(value: string | null): Focus | undefined {
  const match = value === null ? null : /^(user|engine|table):(.+)$/s.exec(value);
  return match ? { kind: match[1] as GraphNodeKind, name: match[2] as string } : undefined;
}

/** The search filter that asks for a node's events: `user` and `engine` match exactly, `table` any name containing it. */
export const FILTER_OF: Record<GraphNodeKind, string> = { user: 'user', engine: 'engine', table: 'table' };

/** A drill-down's rows: the node's own events, and how many the search answered that are not. */
export interface DrillRows {
  events: EventOutput[];
  /** Events of other tables whose names contain the focused one (`orders` in `orders_archive`), left out. */
  leftOut: number;
}

/**
 * Of the events a search with FILTER_OF answered, those of the node itself. The API has no
 * exact-table filter, so a table's search answers every table whose name contains it: those
 * are left out, and counted, so the rows under `hive.sales.orders` are of that table only.
 */
export function drillRows(focus: Focus, answered: EventOutput[]): DrillRows {
  if (focus.kind !== 'table') return { events: answered, leftOut: 0 };
  const events = answered.filter((e) => e.tables.includes(focus.name));
  return { events, leftOut: answered.length - events.length };
}
