import { S3Connections } from '@auditlake/lake';
import { resolveConfig } from '@auditlake/model';
import { startAuditNode, type AuditNode, type EmbeddedS3 } from '@auditlake/server';
import { expect } from 'vitest';
import { parseVerifyOptions } from '../src/verify-options.js';

/** A request to the node as its admin (JSON body unless the caller says otherwise). */
export async function adminRequest(node: AuditNode, token: string, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${node.url}${path}`, { ...init, headers: { authorization: `Token ${token}`, 'content-type': 'application/json', ...(init.headers ?? {}) } });
}

/** Ingests `events` into the node; fails the test unless they are all accepted. */
export async function ingestAll(node: AuditNode, token: string, events: Array<Record<string, unknown>>): Promise<void> {
  const res = await adminRequest(node, token, '/v1/api/audit', { method: 'POST', body: JSON.stringify(events) });
  expect(res.status).toBe(200);
}

/** Polls `condition` every 50 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function waitFor(what: string, condition: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * `auditlake verify` options that read the tier from the node's embedded S3 endpoint alone
 * (`--table` or `--path`), or through `endpoint` in front of it (a proxy counting requests).
 */
export function offlineVerifyOptions(node: AuditNode, target: ['--table' | '--path', string], extra: string[] = [], endpoint?: string) {
  const embedded = node.embeddedS3 as EmbeddedS3;
  return parseVerifyOptions([...target, '--endpoint', endpoint ?? embedded.connectionUrl, '--access-key-id', embedded.credentials.accessKeyId, '--secret-access-key', embedded.credentials.secretAccessKey, ...extra], {});
}

/**
 * A node on loopback with its embedded S3 endpoint that tiers at once (every 100 ms, no settle
 * time) and signs checkpoints only when the test asks (checkpointNow), under `props` besides:
 * the tier's mode and location, and what the test is about. The caller closes it.
 */
export function startTieringNode(dataDir: string, options: { adminToken: string; ingestToken?: string; props: Record<string, string> }): Promise<AuditNode> {
  const props = {
    'auditlake.audit.tier.interval.ms': '100',
    'auditlake.audit.tier.ingest.settle.ms': '0',
    'auditlake.audit.integrity.checkpoint.events': '1000000',
    'auditlake.audit.integrity.checkpoint.interval.ms': '3600000',
    ...options.props,
  };
  const tokens = { adminToken: options.adminToken, ...(options.ingestToken === undefined ? {} : { ingestToken: options.ingestToken }) };
  return startAuditNode({ dataDir, host: '127.0.0.1', port: 0, embeddedS3Port: 0, logger: false, ...tokens, config: resolveConfig(new Map(Object.entries(props))) });
}

/** Connection `t` to the node's embedded S3 endpoint, with its key pair (the tests' own view of the bucket, to read and tamper with). */
export function embeddedS3Connections(node: AuditNode): S3Connections {
  const embedded = node.embeddedS3 as EmbeddedS3;
  return new S3Connections(
    new Map([['t', { id: 't', endpoint: embedded.connectionUrl, region: 'us-east-1', accessKeyId: embedded.credentials.accessKeyId, secretAccessKey: embedded.credentials.secretAccessKey, forcePathStyle: true }]]),
  );
}

/** The props of a Parquet tier at `path` on the embedded endpoint's connection (`local`). */
export function parquetTier(path: string): Record<string, string> {
  return { 'auditlake.audit.tier.mode': 'parquet', 'auditlake.audit.tier.parquet.path': path, 'auditlake.audit.tier.connectionId': 'local' };
}

/** A data:Select by `ana` on a table named after `id`, timed `ageMs` ago. */
export function selectEvent(id: string, ageMs = 1000): Record<string, unknown> {
  return { eventId: id, userId: 'ana', source: 'trino', action: 'data:Select', resource: `hive.sales.${id}`, ts: Date.now() - ageMs };
}
