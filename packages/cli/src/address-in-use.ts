/** The port each option chose, to name the option in a "port in use" message. */
export interface ListenPorts {
  http: number;
  embeddedS3?: number;
}

interface AddressError {
  code?: unknown;
  address?: unknown;
  port?: unknown;
}

/**
 * The one-line message for a listen that failed because the address is taken
 * (`EADDRINUSE`), naming the address, the port and the option that chose it; undefined for
 * any other error.
 */
export function addressInUseMessage(err: unknown, ports: ListenPorts): string | undefined {
  const e = err as AddressError | null;
  if (e === null || typeof e !== 'object' || e.code !== 'EADDRINUSE') return undefined;
  const port = typeof e.port === 'number' ? e.port : undefined;
  const address = typeof e.address === 'string' ? e.address : 'this host';
  const option = port !== undefined && port === ports.embeddedS3 && port !== ports.http ? '--embedded-s3-port' : '--port';
  const where = port === undefined ? address : `${address.includes(':') ? `[${address}]` : address}:${port}`;
  return `cannot listen on ${where}: the port is already in use by another process; stop it or choose another port with ${option}`;
}
