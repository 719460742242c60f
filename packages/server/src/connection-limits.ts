import type { Server, Socket } from 'node:net';

/**
 * Closes, as it arrives, a connection from an address that already holds `max`: with only the
 * node's overall cap (auditlake.http.connections.max), one client holding that many idle
 * connections (each reaped only after 60–90 s without a request) locked every other client,
 * probe and cluster peer out. Addresses are counted as the socket sees them: behind a proxy,
 * every client is the proxy's one address.
 */
export function limitConnectionsPerClient(server: Server, max: number): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = (open.get(address) ?? 0) + 1;
    if (count > max) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
