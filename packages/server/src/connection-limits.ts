import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface ConnectionLimits {
  /** Connections open at once (auditlake.http.connections.max). */
  max: number;
  /** Connections from one client at once (auditlake.http.connections.per.client.max). */
  perClientMax: number;
  /** How long an answer may take no byte before its connection is closed; default STALLED_ANSWER_CLOSE_MS. */
  stalledAnswerCloseMs?: number;
}

/** What the limiter knows of an open connection. */
interface OpenConnection {
  client: string;
  /** Requests whose headers have arrived and whose answer has not been sent. */
  busy: number;
  /** Requests answered on it. */
  served: number;
  /** The socket's bytesWritten and writableLength at the last check (STALL_CHECK_MS). */
  written: number;
  waiting: number;
  /** Since when (monotonic ms) an answer has waited on it with no byte taken by its client; undefined: none waits, or it moves. */
  stalledSinceMs: number | undefined;
}

/** How often the limiter looks at which answers wait on clients that do not read them. */
const STALL_CHECK_MS = 1_000;
/** A connection whose answer has waited this long with no byte taken is closed, cap or not. */
export const STALLED_ANSWER_CLOSE_MS = 60_000;

/**
 * Caps the connections a node holds, all together and per client, so idle connections cannot
 * take the file descriptors LevelDB needs ("Too many open files" failed its writes).
 *
 * Per client: a connection from a client that holds `perClientMax` already is closed as it
 * arrives (with only the overall cap, one client holding that many idle connections locked
 * every other client, probe and cluster peer out). A client is its IPv4 address, or its IPv6
 * /64: one host is handed a whole /64, and counting its addresses apart would let it open
 * `perClientMax` connections from each.
 *
 * All together: at the cap, a new connection takes the place of an open one that is not in a
 * request — the oldest that never sent a whole request first (what a slow-headers attack holds:
 * 1,024 connections from each of four addresses, each sending half a header block, locked every
 * client out until Node's 60 s headers timeout, again and again (review)), else the oldest idle
 * keep-alive connection (its client opens another when it next asks), else the oldest whose
 * answer its client has stopped reading. Only when every open connection is in a request whose
 * answer is being made or read is the new one closed. Addresses are as the socket sees them:
 * behind a proxy, every client is the proxy.
 */
export function limitConnections(server: Server, limits: ConnectionLimits): void {
  // A Map keeps insertion order: oldest connection first.
  const open = new Map<Socket, OpenConnection>();
  // An answer its client does not read keeps its connection in a request for good: connections
  // that pipelined requests for a large open asset and never read filled the cap with no
  // credentials, and every other client was locked out for as long as they stayed (review). An
  // answer that took no byte across a check may be replaced at the cap, and one that took none
  // for STALLED_ANSWER_CLOSE_MS is closed.
  const checkStalls = setInterval(() => {
    const now = performance.now();
    for (const [socket, connection] of open) {
      const written = socket.bytesWritten;
      const waiting = socket.writableLength;
      if (waiting === 0 || written !== connection.written || waiting !== connection.waiting) connection.stalledSinceMs = undefined;
      else connection.stalledSinceMs ??= now;
      connection.written = written;
      connection.waiting = waiting;
      if (connection.stalledSinceMs !== undefined && now - connection.stalledSinceMs >= (limits.stalledAnswerCloseMs ?? STALLED_ANSWER_CLOSE_MS)) {
        socket.destroy();
        forget(socket);
      }
    }
  }, STALL_CHECK_MS);
  checkStalls.unref();
  server.once('close', () => clearInterval(checkStalls));
  const perClient = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const client = clientOf(socket.remoteAddress ?? '');
    if ((perClient.get(client) ?? 0) + 1 > limits.perClientMax) {
      socket.destroy();
      return;
    }
    if (open.size >= limits.max) {
      const victim = replaceable(open);
      if (victim === undefined) {
        socket.destroy();
        return;
      }
      victim.destroy();
      forget(victim);
    }
    // Counted after the eviction: the connection replaced may be this client's own, and a count
    // taken before it was one too many for good, until the client was locked out.
    perClient.set(client, (perClient.get(client) ?? 0) + 1);
    open.set(socket, { client, busy: 0, served: 0, written: 0, waiting: 0, stalledSinceMs: undefined });
    socket.once('close', () => forget(socket));
  });
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const connection = open.get(request.socket);
    if (connection === undefined) return;
    connection.busy++;
    response.once('close', () => {
      connection.busy--;
      connection.served++;
    });
  });

  function forget(socket: Socket): void {
    const connection = open.get(socket);
    if (connection === undefined) return;
    open.delete(socket);
    const left = (perClient.get(connection.client) ?? 1) - 1;
    if (left === 0) perClient.delete(connection.client);
    else perClient.set(connection.client, left);
  }
}

/**
 * The oldest open connection not in a request — one that never sent a whole request first — else
 * the oldest whose answer waits on a client that took no byte of it across a check.
 */
function replaceable(open: ReadonlyMap<Socket, OpenConnection>): Socket | undefined {
  let idle: Socket | undefined;
  let stalled: Socket | undefined;
  for (const [socket, connection] of open) {
    if (connection.busy > 0) {
      if (connection.stalledSinceMs !== undefined) stalled ??= socket;
      continue;
    }
    if (connection.served === 0) return socket;
    idle ??= socket;
  }
  return idle ?? stalled;
}

/** The client a remote address counts for: an IPv4 address (also IPv4-mapped), or an IPv6 address's /64. */
export function clientOf(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1] as string;
  if (!address.includes(':')) return address;
  const zone = address.indexOf('%');
  const bare = zone < 0 ? address : address.slice(0, zone);
  const [head = '', tail] = bare.split('::');
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? front : [...front, ...new Array<string>(Math.max(0, 8 - front.length - back.length)).fill('0'), ...back];
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group || '0', 16).toString(16))
    .join(':')}::/64`;
}
