import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { AuditError, AuditErrorCode, parseProperties, resolveConfig, type NodeConfig } from '@auditlake/model';

export const START_USAGE = `usage: auditlake start [--data-dir DIR] [--host ADDR] [--port N] [--config FILE] [--set key=value]...
                       [--node-id ID] [--advertise URL] [--coordinator redis://HOST:PORT]
                       [--embedded-s3] [--embedded-s3-port N] [--log-level LEVEL]`;

export interface StartOptions {
  dataDir: string;
  host: string;
  port: number;
  config: NodeConfig;
  nodeId?: string;
  advertiseUrl?: string;
  coordinatorUrl?: string;
  /** Set with --embedded-s3: the embedded S3 endpoint's port. */
  embeddedS3Port?: number;
  logLevel: string;
}

function usageError(message: string): AuditError {
  return new AuditError(AuditErrorCode.CONFIG_INVALID, `${message}\n${START_USAGE}`);
}

function parsePort(flag: string, value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) throw usageError(`${flag} must be a port number from 0 to 65535: ${value}`);
  return port;
}

/**
 * Parses `auditlake start` arguments: the properties file first, then every `--set`
 * (later wins), into a validated configuration. Throws a coded error naming the bad input.
 */
export function parseStartOptions(args: string[]): StartOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        'data-dir': { type: 'string', default: './data' },
        host: { type: 'string', default: '127.0.0.1' },
        port: { type: 'string', default: '7070' },
        config: { type: 'string' },
        set: { type: 'string', multiple: true, default: [] },
        'node-id': { type: 'string' },
        advertise: { type: 'string' },
        coordinator: { type: 'string' },
        'embedded-s3': { type: 'boolean', default: false },
        'embedded-s3-port': { type: 'string' },
        'log-level': { type: 'string', default: 'info' },
      },
    });
  } catch (err) {
    throw usageError((err as Error).message);
  }
  const v = parsed.values;
  if (v.coordinator !== undefined && !/^rediss?:\/\/[^/]+/.test(v.coordinator)) {
    throw usageError(`--coordinator must be a Redis URL (redis://host:port): ${v.coordinator}`);
  }

  const props = new Map<string, string>();
  if (v.config !== undefined) {
    let text: string;
    try {
      text = readFileSync(v.config, 'utf8');
    } catch (err) {
      throw usageError(`--config ${v.config}: ${(err as Error).message}`);
    }
    for (const [key, value] of parseProperties(text)) props.set(key, value);
  }
  for (const assignment of v.set) {
    const eq = assignment.indexOf('=');
    if (eq <= 0) throw usageError(`--set must be key=value: ${assignment}`);
    props.set(assignment.slice(0, eq).trim(), assignment.slice(eq + 1).trim());
  }
  const options: StartOptions = {
    dataDir: v['data-dir'],
    host: v.host,
    port: parsePort('--port', v.port),
    config: resolveConfig(props),
    logLevel: v['log-level'],
  };
  if (v['node-id'] !== undefined) options.nodeId = v['node-id'];
  if (v.advertise !== undefined) options.advertiseUrl = v.advertise;
  if (v.coordinator !== undefined) options.coordinatorUrl = v.coordinator;
  if (v['embedded-s3-port'] !== undefined && !v['embedded-s3']) throw usageError('--embedded-s3-port needs --embedded-s3');
  if (v['embedded-s3']) {
    // Default: the HTTP port + 1 (any free port when the HTTP port is 0).
    options.embeddedS3Port = v['embedded-s3-port'] !== undefined ? parsePort('--embedded-s3-port', v['embedded-s3-port']) : options.port === 0 ? 0 : options.port + 1;
  }
  return options;
}
