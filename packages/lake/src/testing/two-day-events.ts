import type { StoredEvent } from '@auditlake/model';

const DAY_MS = 86_400_000;

/**
 * Stored events `firstSeq`.. as the tier tests commit them: timed over two days from `t0`
 * (alternating, so a commit touches two day partitions), ingested ten days after `t0` in seq
 * order, under seven users; every `denyEvery`-th seq a DENY when asked for.
 */
export function twoDayEvents(t0: number, firstSeq: number, count: number, options: { denyEvery?: number } = {}): StoredEvent[] {
  const { denyEvery } = options;
  return Array.from({ length: count }, (_, i) => {
    const seq = firstSeq + i;
    const decision = denyEvery !== undefined && seq % denyEvery === 0 ? 'DENY' : 'ALLOW';
    return { eventId: `e${seq}`, userId: `u${seq % 7}`, source: 'trino', action: 'data:Select', resource: 'r', decision, tables: ['t'], query: `q${seq}`, details: '', timestamp: t0 + (seq % 2) * DAY_MS + seq, ingestTs: t0 + 10 * DAY_MS + seq, seq, term: 1 };
  });
}
