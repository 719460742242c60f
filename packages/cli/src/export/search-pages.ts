import { AuditError, AuditErrorCode, type EventOutput } from '@auditlake/model';
import { errorText, type NodeClient } from '../node-client.js';

export interface SearchPage {
  events: EventOutput[];
  nextCursor?: string;
  /** The answering node is not the leader and has none to forward to: its copy may lag. */
  stale: boolean;
}

interface SearchAnswer {
  events: EventOutput[];
  nextCursor?: string;
  tierNote?: string;
}

/**
 * Every page of a search, newest first, following `nextCursor` until the answer is not cut:
 * the keyset cursor returns each matching event exactly once, also while new events arrive
 * (they are newer than the first page, so not part of this export) and while events move
 * from the node's disk to S3.
 *
 * A 400 (a filter the node refuses) throws BAD_REQUEST; a page the node could read only in
 * part (`tierNote`: tiered history unreachable) throws UNREACHABLE, since a file missing
 * events it cannot name would look complete.
 */
export async function* searchPages(node: NodeClient, filters: Readonly<Record<string, string>>, pageSize: number): AsyncGenerator<SearchPage> {
  let cursor: string | undefined;
  do {
    const params = new URLSearchParams({ ...filters, limit: String(pageSize) });
    if (cursor !== undefined) params.set('cursor', cursor);
    const response = await node.request(`/admin/audit?${params.toString()}`, { headers: { accept: 'application/json' } });
    const body = await response.text();
    if (response.status === 400) throw new AuditError(AuditErrorCode.BAD_REQUEST, `${node.shown} refused the search: ${errorText(body)}`);
    if (response.status !== 200) throw new AuditError(AuditErrorCode.UNREACHABLE, `${node.shown}/admin/audit answered ${response.status}: ${errorText(body)}`);
    const answer = JSON.parse(body) as SearchAnswer;
    if (answer.tierNote !== undefined) {
      throw new AuditError(AuditErrorCode.UNREACHABLE, `${node.shown} could not read all of the history (${answer.tierNote}); the export would miss events, so none was written`, { retryable: true });
    }
    const page: SearchPage = { events: answer.events, stale: response.headers.get('x-auditlake-stale') === 'true' };
    if (answer.nextCursor !== undefined) page.nextCursor = answer.nextCursor;
    yield page;
    cursor = answer.nextCursor;
  } while (cursor !== undefined);
}
