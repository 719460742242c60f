/** The search form's fields, as kept in the URL. */
export const FILTER_FIELDS = ['q', 'user', 'engine', 'table', 'action', 'decision'] as const;
export type Filters = Record<(typeof FILTER_FIELDS)[number], string>;

/** The Decision select's values; the API reads `decision` case-insensitively. */
const DECISIONS = ['ALLOW', 'DENY', 'none'] as const;

/**
 * The form's fields as the URL holds them, a decision in any case as the select's option
 * (`?decision=deny` filters DENY, so the select must show DENY, not a blank). A value the API
 * refuses is kept as it is, so its refusal is what the page shows.
 */
export function readFilters(params: URLSearchParams): Filters {
  const filters = Object.fromEntries(FILTER_FIELDS.map((f) => [f, params.get(f) ?? ''])) as Filters;
  filters.decision = DECISIONS.find((d) => d.toLowerCase() === filters.decision.toLowerCase()) ?? filters.decision;
  return filters;
}
