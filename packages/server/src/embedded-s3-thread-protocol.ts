import type { S3Credentials } from '@auditlake/s3-endpoint';
import type { ConnectionLimits } from './connection-limits.js';

/** What the embedded endpoint's thread is started with (structured-cloneable: no functions). */
export interface EmbeddedS3ThreadData {
  directory: string;
  host: string;
  port: number;
  buckets: string[];
  credentials: S3Credentials;
  publicRead: boolean;
  /** The node's Host names (HostNames' arguments) unsigned reads are answered under; absent: any. */
  publicReadHosts?: { configured: string[]; own: string[] };
  /** The node's connection caps (auditlake.http.connections.*), applied to this listener as to the API's. */
  connectionLimits: ConnectionLimits;
}

/** The parent to the thread. */
export type EmbeddedS3ThreadRequest = { type: 'close' };

/** The thread to the parent. */
export type EmbeddedS3ThreadMessage =
  | { type: 'listening'; port: number }
  | { type: 'start-failed'; error: ErrorData }
  | { type: 'internal-error'; error: ErrorData }
  | { type: 'closed' };

/**
 * An error as it crosses threads: its message, name and the system error fields a caller reads
 * (a taken port is told apart by `code` EADDRINUSE, and named by `address` and `port`).
 */
export interface ErrorData {
  name: string;
  message: string;
  stack?: string;
  code?: string;
  errno?: number;
  syscall?: string;
  address?: string;
  port?: number;
}

export function errorData(err: unknown): ErrorData {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  const e = err as Error & Partial<Record<'code' | 'errno' | 'syscall' | 'address' | 'port', unknown>>;
  return {
    name: e.name,
    message: e.message,
    ...(e.stack === undefined ? {} : { stack: e.stack }),
    ...(typeof e.code === 'string' ? { code: e.code } : {}),
    ...(typeof e.errno === 'number' ? { errno: e.errno } : {}),
    ...(typeof e.syscall === 'string' ? { syscall: e.syscall } : {}),
    ...(typeof e.address === 'string' ? { address: e.address } : {}),
    ...(typeof e.port === 'number' ? { port: e.port } : {}),
  };
}

/** The error again, on this side: the same message, name and system error fields. */
export function errorFromData(data: ErrorData): Error {
  const err = data.name === 'TypeError' ? new TypeError(data.message) : new Error(data.message);
  if (data.name !== err.name) err.name = data.name;
  if (data.stack !== undefined) err.stack = data.stack;
  const { code, errno, syscall, address, port } = data;
  return Object.assign(err, { ...(code === undefined ? {} : { code }), ...(errno === undefined ? {} : { errno }), ...(syscall === undefined ? {} : { syscall }), ...(address === undefined ? {} : { address }), ...(port === undefined ? {} : { port }) });
}
