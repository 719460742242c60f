import type { FastifyServerOptions } from 'fastify';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type NodeLoggerOptions = NonNullable<FastifyServerOptions['logger']>;

/**
 * The node's one logger (pino, as fastify uses), made before anything else so that every
 * part — cluster, tiering, HTTP — is built with it rather than handed it once the app exists.
 * Takes fastify's logger options: false for none, or pino options with an optional `stream`
 * or `file`.
 */
export function createNodeLogger(options: NodeLoggerOptions | undefined): Logger {
  if (options === undefined || options === false) return pino({ enabled: false });
  if (options === true) return pino();
  const { stream, file, ...rest } = options as LoggerOptions & { stream?: DestinationStream; file?: string };
  if (stream !== undefined) return pino(rest, stream);
  if (file !== undefined) return pino(rest, pino.destination(file));
  return pino(rest);
}
