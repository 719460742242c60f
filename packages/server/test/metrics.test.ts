// Goal: /metrics carries what an operator alerts on — tiering health, leadership, replication lag — and the standard process metrics.
import { describe, expect, it } from 'vitest';
import { FAST_TIERING, externalS3, postSettings, waitUntilTiered } from './tier-helpers.js';
import { event, startTestNode } from './test-node.js';

async function metrics(t: Awaited<ReturnType<typeof startTestNode>>): Promise<string> {
  const res = await t.request('/metrics', { token: null });
  expect(res.status).toBe(200);
  return res.text();
}

const value = (text: string, name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1]);

describe('/metrics', () => {
  it('reports tier backlog, watermark, last success and failure, sweep failures, leader and term, lag, and process metrics', async () => {
    const s3 = await externalS3();
    const t = await startTestNode({ props: { ...FAST_TIERING, ...s3.props('ext') } });
    await t.ingest([event(), event()]);
    let text = await metrics(t);
    expect(value(text, 'auditlake_tier_backlog_events')).toBe(2);
    expect(value(text, 'auditlake_tier_watermark_seq')).toBe(0);
    expect(value(text, 'auditlake_tier_last_success_timestamp_seconds')).toBe(0);
    expect(value(text, 'auditlake_cluster_leader')).toBe(1);
    expect(value(text, 'auditlake_cluster_term')).toBe(0);
    expect(text).toMatch(/^auditlake_replication_lag_seconds\{node="[^"]+"\} 0$/m);
    // prom-client's default process and Node.js metrics.
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) expect(text).toMatch(new RegExp(`^${name}`, 'm'));

    expect((await postSettings(t, { 'audit.tier.mode': 'parquet', 'audit.tier.parquet.path': 's3://ext/audit', 'audit.tier.connectionId': 'ext' })).status).toBe(200);
    const status = await waitUntilTiered(t);
    text = await metrics(t);
    expect(value(text, 'auditlake_tier_backlog_events')).toBe(0);
    expect(value(text, 'auditlake_tier_watermark_seq')).toBe(status.watermark.seq);
    expect(value(text, 'auditlake_tier_watermark_ingest_timestamp_seconds')).toBe(status.watermark.ingestTs / 1000);
    expect(value(text, 'auditlake_tier_last_success_timestamp_seconds')).toBeGreaterThan(0);
    expect(value(text, 'auditlake_tier_sweep_failures_total')).toBe(0);

    // S3 down: sweeps fail, are counted, and the last failure time is set.
    await s3.stop();
    await t.ingest([event()]);
    await expect.poll(async () => value(await metrics(t), 'auditlake_tier_sweep_failures_total'), { timeout: 20_000 }).toBeGreaterThan(0);
    text = await metrics(t);
    expect(value(text, 'auditlake_tier_last_failure_timestamp_seconds')).toBeGreaterThan(0);
    expect(value(text, 'auditlake_tier_backlog_events')).toBe(1);
  });
});
