import { verifyHistory, parseVerifyOptions } from '@auditlake/cli';
import { resolveConfig } from '@auditlake/model';
import { startAuditNode } from '@auditlake/server';
import { createEventGenerator } from '@auditlake/testkit';
import { loadGenerated } from './dist/store-loader.js';
import { mkdtempSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
const N = Number(process.env.N ?? 200000);
const TIER_PATH = 's3://auditlake/bench-tier';
const node = await startAuditNode({ dataDir: mkdtempSync('/tmp/vprof/node-'), host: '127.0.0.1', port: 0, embeddedS3Port: 0, adminToken: 'bench', logger: false,
  config: resolveConfig(new Map(Object.entries({ 'auditlake.audit.tier.mode': 'parquet', 'auditlake.audit.tier.parquet.path': TIER_PATH, 'auditlake.audit.tier.connectionId': 'local', 'auditlake.audit.tier.interval.ms': '200', 'auditlake.audit.tier.ingest.settle.ms': '0', 'auditlake.audit.tier.batch.size': '50000', 'auditlake.audit.tier.retain.local.days': '30' }))) });
const generator = createEventGenerator({ seed: 20250101, startTs: Date.now() - 7 * 86_400_000, spanMs: 7 * 86_400_000, count: N });
for (let loaded = 0; loaded < N; ) { const size = Math.min(100_000, N - loaded); await loadGenerated(node.store, generator, size, 10000); loaded += size; await node.integrity.checkpointNow(); }
const head = node.store.chainHead.seq;
while ((await node.tiering.watermark()).seq < head) await new Promise((r) => setTimeout(r, 200));
const e = node.embeddedS3;
const opts = parseVerifyOptions(['--path', TIER_PATH, '--endpoint', e.connectionUrl, '--access-key-id', e.credentials.accessKeyId, '--secret-access-key', e.credentials.secretAccessKey], {});
for (const threads of [opts.threads, 0]) {
  const c0 = process.cpuUsage(); const t = performance.now(); const r = await verifyHistory({ ...opts, threads }); const ms = performance.now() - t; const c = process.cpuUsage(c0); console.log("cpu ms", ((c.user + c.system) / 1000).toFixed(0));
  console.log(`threads ${threads}: ${r.message} ${ms.toFixed(0)} ms ${(r.records / ms * 1000).toFixed(0)} rec/s`);
}
if (process.env.PROF) {
  const s = new Session(); s.connect(); await s.post('Profiler.enable'); await s.post('Profiler.start');
  const r = await verifyHistory({ ...opts, threads: Number(process.env.PROF_THREADS ?? 0) });
  const { profile } = await s.post('Profiler.stop'); writeFileSync('/tmp/vprof/verify.cpuprofile', JSON.stringify(profile));
}
await node.close();
