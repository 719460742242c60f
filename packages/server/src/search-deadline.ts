import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { FastifyReply } from 'fastify';

/** A search's signal, and what to call once it has answered. */
export interface SearchDeadline {
  signal: AbortSignal;
  done(): void;
}

/**
 * The signal a search reads under: aborted when its client goes away (the connection closed
 * before the answer was written out) or once `timeoutMs` passed. A search that matched nothing
 * over a large store used to go on to its end either way: 16 clients that left after a second
 * kept the node scanning at full CPU for 3.5 minutes, its health checks taking 20 s.
 */
export function searchDeadline(reply: FastifyReply, timeoutMs: number): SearchDeadline {
  const controller = new AbortController();
  const timer = setTimeout(
    () =>
      controller.abort(
        new AuditError(AuditErrorCode.SEARCH_TIMEOUT, `the search read for longer than ${timeoutMs} ms (auditlake.audit.search.timeout.ms) and was stopped; narrow it (a shorter window, a user, table or engine) or ask for a smaller limit`),
      ),
    timeoutMs,
  );
  const gone = () => {
    if (!reply.raw.writableFinished) controller.abort(new AuditError(AuditErrorCode.BAD_REQUEST, 'the client closed its connection before the answer'));
  };
  reply.raw.once('close', gone);
  return {
    signal: controller.signal,
    done: () => {
      clearTimeout(timer);
      reply.raw.off('close', gone);
    },
  };
}

/**
 * Closes the connection of an answer still not taken by its client `ms` after it was handed to
 * the socket: one that stops reading a page (up to 32 Mi characters) otherwise held the page's
 * buffers for as long as it kept the connection open.
 */
export function giveUpUnreadAnswer(reply: FastifyReply, ms: number): void {
  const timer = setTimeout(() => {
    if (!reply.raw.writableFinished) reply.raw.destroy();
  }, ms);
  const done = () => clearTimeout(timer);
  reply.raw.once('finish', done);
  reply.raw.once('close', done);
}
