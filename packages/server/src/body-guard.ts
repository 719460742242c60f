import type { FastifyInstance } from 'fastify';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { clientOf } from './connection-limits.js';

export interface BodyGuardOptions {
  /** The most body bytes all requests may hold at once (auditlake.http.body.inflight.max.bytes). */
  inflightMaxBytes: number;
  /** The most of them the requests of one client may hold (auditlake.http.body.inflight.per.client.max.bytes). */
  inflightPerClientMaxBytes: number;
  /** The largest body one request may send (auditlake.http.body.limit.bytes, unless its route sets its own): what a body of unknown length is counted as. */
  bodyLimitBytes: number;
  /** How long a body may take to arrive once its headers have (auditlake.http.body.timeout.ms). */
  bodyTimeoutMs: number;
}

/**
 * Bounds what request bodies can hold: their bytes all together, and their time. Without it,
 * 150 connections from one ingest client, each sending its headers and 8 MiB less one byte of
 * body and then nothing, held 1.2 GB of the node's memory for as long as they stayed open (no
 * timeout applies once the headers are in), and the connection caps allowed 32 GiB (review).
 *
 * A request with a body reserves its declared length (a body without one, chunked, the body
 * limit) once authenticated, before any of it is read; past the budget it is refused with
 * AUDIT_LIMIT_EXCEEDED, retryable (429, Retry-After), nothing read or stored. The reservation
 * is returned when the request's connection is done with it (answered, or closed). A body not
 * in within the timeout has its connection closed: the request was never answered, so never
 * acknowledged.
 */
export function guardRequestBodies(app: FastifyInstance, options: BodyGuardOptions): { heldBytes: () => number } {
  let held = 0;
  /** Bytes held by each client (clientOf its address) with any held. */
  const heldBy = new Map<string, number>();
  app.addHook('preParsing', async (request, reply) => {
    // A route may take larger bodies than the node's limit (a standby's forwarded batch).
    const declared = bodyLengthOf(request.headers['content-length'], request.headers['transfer-encoding'], request.routeOptions.bodyLimit ?? options.bodyLimitBytes);
    if (declared === 0) return;
    const client = clientOf(request.socket.remoteAddress ?? '');
    const own = heldBy.get(client) ?? 0;
    // One body always fits, for the node and for a client: a budget below the body limit would
    // otherwise refuse a largest body forever. A client's own share keeps one client (with
    // valid credentials) from taking the whole budget from the others.
    if (own > 0 && own + declared > options.inflightPerClientMaxBytes) {
      throw budgetSpent(`this client holds ${own} bytes of request bodies, and this one's ${declared} would pass auditlake.http.body.inflight.per.client.max.bytes (${options.inflightPerClientMaxBytes})`);
    }
    if (held > 0 && held + declared > options.inflightMaxBytes) {
      throw budgetSpent(`the node holds ${held} bytes of request bodies, and this one's ${declared} would pass auditlake.http.body.inflight.max.bytes (${options.inflightMaxBytes})`);
    }
    held += declared;
    heldBy.set(client, own + declared);
    const socket = request.raw.socket;
    const timer = setTimeout(() => socket.destroy(), options.bodyTimeoutMs);
    timer.unref();
    request.bodyTimer = timer;
    let released = false;
    const release = () => {
      clearTimeout(timer);
      if (released) return;
      released = true;
      held -= declared;
      const left = (heldBy.get(client) ?? declared) - declared;
      if (left <= 0) heldBy.delete(client);
      else heldBy.set(client, left);
    };
    // The response's 'close' comes once it is sent or its connection is gone, whichever first —
    // but not for a pipelined request's response still queued behind another when the
    // connection goes: its reservation stayed held for good (review). So the connection's close
    // releases too, and a release stops listening for it (a keep-alive connection serves many).
    reply.raw.once('close', release);
    socket.once('close', release);
    reply.raw.once('close', () => socket.removeListener('close', release));
  });
  // The body has arrived (it is parsed before validation): its time is no longer counted.
  app.addHook('preValidation', async (request) => {
    if (request.bodyTimer !== undefined) clearTimeout(request.bodyTimer);
  });
  return { heldBytes: () => held };
}

function budgetSpent(why: string): AuditError {
  return new AuditError(AuditErrorCode.LIMIT_EXCEEDED, `${why}: retry shortly`, { retryable: true });
}

/** The bytes a request's body is counted as: its Content-Length (at most the route's body limit), or that limit for one sent chunked; 0 for none. */
function bodyLengthOf(contentLength: string | undefined, transferEncoding: string | undefined, bodyLimitBytes: number): number {
  if (contentLength !== undefined && /^\d+$/.test(contentLength)) return Math.min(Number(contentLength), bodyLimitBytes);
  return transferEncoding === undefined ? 0 : bodyLimitBytes;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Closes the connection of a body that does not arrive in time (guardRequestBodies). */
    bodyTimer?: NodeJS.Timeout;
  }
}
