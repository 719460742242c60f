import type { AuditNode, EmbeddedS3 } from '@auditlake/server';
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

/** `auditlake verify` options that read the tier from the node's embedded S3 endpoint alone (`--table` or `--path`). */
export function offlineVerifyOptions(node: AuditNode, target: ['--table' | '--path', string], extra: string[] = []) {
  const embedded = node.embeddedS3 as EmbeddedS3;
  return parseVerifyOptions([...target, '--endpoint', embedded.connectionUrl, '--access-key-id', embedded.credentials.accessKeyId, '--secret-access-key', embedded.credentials.secretAccessKey, ...extra], {});
}
