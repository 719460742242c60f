// Goal: error codes say what happened and retryable ones tell the client when to retry; a single node refuses ack=replicated before storing anything and reports itself in /admin/cluster and the cluster gauges.
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { toHttpError } from '../src/http-errors.js';
import { event, startTestNode } from './test-node.js';

describe('error mapping', () => {
  it('gives retryable errors a Retry-After and keeps the code that says what happened', () => {
    expect(toHttpError(new AuditError(AuditErrorCode.REPLICATION_TIMEOUT, 'not confirmed', { retryable: true }))).toEqual({
      statusCode: 503,
      body: { status: 'error', error: 'not confirmed', code: 'AUDIT_REPLICATION_TIMEOUT' },
      retryAfterSeconds: 1,
    });
    expect(toHttpError(new AuditError(AuditErrorCode.STORE_WRITE_FAILED, 'disk full', { retryable: true })).statusCode).toBe(503);
    expect(toHttpError(new AuditError(AuditErrorCode.TABLE_INVALID, 'tiered file is not readable Parquet'))).toEqual({
      statusCode: 502,
      body: { status: 'error', error: 'tiered file is not readable Parquet', code: 'AUDIT_TABLE_INVALID' },
    });
    expect(toHttpError(new AuditError(AuditErrorCode.BAD_REQUEST, 'bad')).retryAfterSeconds).toBeUndefined();
  });

  it("never answers a framework's own error code: a request without a content type is AUDIT_UNSUPPORTED_MEDIA_TYPE", async () => {
    const t = await startTestNode();
    // A byte body: fetch sets no content type for it.
    const res = await t.request('/v1/api/audit', { method: 'POST', token: 'ingest-secret-for-tests', body: new TextEncoder().encode(JSON.stringify([event({ eventId: 'untyped' })])) });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({ status: 'error', code: 'AUDIT_UNSUPPORTED_MEDIA_TYPE' });
    expect(await t.stored()).toEqual([]);
    expect(toHttpError(Object.assign(new Error('odd'), { statusCode: 400, code: 'FST_SOMETHING' })).body.code).toBe('AUDIT_BAD_REQUEST');
  });
});

describe('a single node (no --coordinator)', () => {
  it('refuses ack=replicated with a 400 before storing anything', async () => {
    const t = await startTestNode();
    const res = await t.request('/v1/api/audit?ack=replicated', { method: 'POST', token: 'ingest-secret-for-tests', headers: { 'content-type': 'application/json' }, body: JSON.stringify([event({ eventId: 'lonely' })]) });
    expect(res.status).toBe(400);
    expect(res.headers.get('retry-after')).toBeNull();
    expect(await res.json()).toMatchObject({ code: 'AUDIT_BAD_REQUEST', error: expect.stringMatching(/^ack=replicated needs a standby.*nothing was stored/) });
    expect(await t.stored()).toEqual([]);
  });

  it('lists itself as the leader in /admin/cluster and in the cluster gauges', async () => {
    const t = await startTestNode();
    await t.ingest([event({ eventId: 'one' }), event({ eventId: 'two' })]);
    const status = (await (await t.request('/admin/cluster')).json()) as Record<string, unknown>;
    expect(status).toEqual({ nodeId: t.node.nodeId, role: 'leader', term: 0, leader: { nodeId: t.node.nodeId, url: t.node.url }, nodes: [{ nodeId: t.node.nodeId, url: t.node.url, role: 'leader', appliedSeq: 2, lagMs: 0, lastHeardMs: 0 }] });
    const metrics = await (await t.request('/metrics')).text();
    expect(metrics).toMatch(/^auditlake_cluster_leader 1$/m);
    expect(metrics).toMatch(/^auditlake_cluster_term 0$/m);
    expect(metrics).toContain(`auditlake_cluster_node_applied_seq{node="${t.node.nodeId}"} 2`);
    expect(metrics).toContain(`auditlake_cluster_node_reachable{node="${t.node.nodeId}"} 1`);
    expect(metrics).toContain(`auditlake_cluster_node_last_heard_seconds{node="${t.node.nodeId}"} 0`);
    expect(metrics).toMatch(/^auditlake_outbox_events 0$/m);
  });
});
