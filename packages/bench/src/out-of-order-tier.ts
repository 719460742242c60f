/**
 * A tier listed out of seq order, for timing `auditlake verify` on it as a process of its own:
 * a real node tiers `--events` events to its embedded S3 endpoint, `--batch` at a time (each
 * request tiered before the next is sent), every batch holding events of `--days` days
 * interleaved, so every sweep writes a file into each day partition and a listing by day and
 * commit is far from seq order. Then the node stops; `serve` serves the bucket (the S3 endpoint
 * alone, or the node again with `--with-node`) until the process is stopped (SIGINT/SIGTERM),
 * printing the verify arguments.
 *
 *   node packages/bench/dist/out-of-order-tier.js write <dir> [--mode parquet|iceberg] [--events N] [--days D] [--batch B]
 *   node packages/bench/dist/out-of-order-tier.js serve <dir> [--port P] [--with-node]
 *
 * Never part of `npm test` or `npm run bench`.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveConfig } from '@auditlake/model';
import { startS3Endpoint } from '@auditlake/s3-endpoint';
import { startAuditNode } from '@auditlake/server';

const DAY_MS = 86_400_000;
const ADMIN_TOKEN = 'out-of-order-tier-admin';
const CREDENTIALS = { accessKeyId: 'outoforder', secretAccessKey: 'outoforder-secret-key-0123456789' };
const PARQUET_PATH = 's3://auditlake/out-of-order';
const TABLE_LOCATION = 's3://auditlake/warehouse/audit/events';

interface TierFacts {
  mode: 'parquet' | 'iceberg';
  events: number;
  headSeq: number;
  port: number;
}

function log(message: string): void {
  process.stderr.write(`[out-of-order-tier ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

async function write(dir: string, mode: 'parquet' | 'iceberg', events: number, days: number, batch: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  const props = {
    ...tierProps(mode),
    'auditlake.audit.tier.interval.ms': '100',
    'auditlake.audit.tier.ingest.settle.ms': '0',
    'auditlake.audit.tier.maintenance.enabled': 'false',
    'auditlake.audit.integrity.checkpoint.events': '5000',
  };
  const node = await startAuditNode({
    dataDir: join(dir, 'node'),
    host: '127.0.0.1',
    port: 0,
    embeddedS3Port: 0,
    embeddedS3Credentials: CREDENTIALS,
    logger: false,
    adminToken: ADMIN_TOKEN,
    config: resolveConfig(new Map(Object.entries(props))),
  });
  try {
    const firstDay = Math.floor(Date.now() / DAY_MS) - days;
    for (let sent = 0; sent < events; sent += batch) {
      const count = Math.min(batch, events - sent);
      const body = Array.from({ length: count }, (_, k) => {
        const i = sent + k;
        return {
          eventId: `ooo-${i}`,
          userId: `user-${i % 50}`,
          source: 'trino',
          action: 'data:Select',
          resource: `hive.sales.t${i % 200}`,
          decision: 'ALLOW',
          tables: [`hive.sales.t${i % 200}`],
          query: `SELECT * FROM hive.sales.t${i % 200} WHERE id = ${i}`,
          // Every day of the span in every batch: one file per day per sweep.
          ts: (firstDay + (i % days)) * DAY_MS + Math.floor(i / days) * 1000,
        };
      });
      const res = await fetch(`${node.url}/v1/api/audit`, { method: 'POST', headers: { authorization: `Token ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
      const head = node.store.chainHead.seq;
      while ((await node.tiering.watermark()).seq < head) await new Promise((resolve) => setTimeout(resolve, 20));
      if ((sent / batch) % 20 === 0) log(`${sent + count} of ${events} events tiered`);
    }
    await node.integrity.checkpointNow();
    const head = node.store.chainHead.seq;
    while ((await node.tiering.watermark()).seq < head) await new Promise((resolve) => setTimeout(resolve, 20));
    const facts: TierFacts = { mode, events, headSeq: head, port: 0 };
    await writeFile(join(dir, 'tier.json'), JSON.stringify(facts));
    log(`tiered ${events} events (head seq ${head}) as ${mode}`);
  } finally {
    await node.close();
  }
}

function tierProps(mode: 'parquet' | 'iceberg'): Record<string, string> {
  return mode === 'parquet'
    ? { 'auditlake.audit.tier.mode': 'parquet', 'auditlake.audit.tier.parquet.path': PARQUET_PATH, 'auditlake.audit.tier.connectionId': 'local' }
    : { 'auditlake.audit.tier.mode': 'iceberg', 'auditlake.audit.tier.iceberg.table': 'local.audit.events' };
}

/**
 * Serves the bucket: from the S3 endpoint alone, or (`withNode`) from the node again, whose
 * log then verifies with the tier (`--url … --token …` printed too); the node tiers nothing new.
 */
async function serve(dir: string, port: number, withNode: boolean): Promise<void> {
  const facts = JSON.parse(await readFile(join(dir, 'tier.json'), 'utf8')) as TierFacts;
  const target = facts.mode === 'parquet' ? `--path ${PARQUET_PATH}` : `--table ${TABLE_LOCATION}`;
  const stopped = new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  if (withNode) {
    const props = { ...tierProps(facts.mode), 'auditlake.audit.tier.maintenance.enabled': 'false', 'auditlake.audit.integrity.checkpoint.events': '5000' };
    const node = await startAuditNode({ dataDir: join(dir, 'node'), host: '127.0.0.1', port: 0, embeddedS3Port: port, embeddedS3Credentials: CREDENTIALS, logger: false, adminToken: ADMIN_TOKEN, config: resolveConfig(new Map(Object.entries(props))) });
    const url = node.embeddedS3?.connectionUrl ?? '';
    process.stdout.write(`${target} --endpoint ${url} --access-key-id ${CREDENTIALS.accessKeyId} --secret-access-key ${CREDENTIALS.secretAccessKey} --url ${node.url} --token ${ADMIN_TOKEN}\n`);
    await stopped;
    await node.close();
    return;
  }
  const endpoint = await startS3Endpoint({ directory: join(dir, 'node', 's3'), host: '127.0.0.1', port, buckets: ['auditlake'], credentials: CREDENTIALS });
  process.stdout.write(`${target} --endpoint ${endpoint.url} --access-key-id ${CREDENTIALS.accessKeyId} --secret-access-key ${CREDENTIALS.secretAccessKey}\n`);
  await stopped;
  await endpoint.close();
}

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { mode: { type: 'string', default: 'parquet' }, events: { type: 'string', default: '20000' }, days: { type: 'string', default: '10' }, batch: { type: 'string', default: '180' }, port: { type: 'string', default: '0' }, 'with-node': { type: 'boolean', default: false } },
});
const [command, dir] = positionals;
if (dir === undefined || (command !== 'write' && command !== 'serve') || (values.mode !== 'parquet' && values.mode !== 'iceberg')) {
  process.stderr.write('usage: out-of-order-tier.js write <dir> [--mode parquet|iceberg] [--events N] [--days D] [--batch B] | serve <dir> [--port P] [--with-node]\n');
  process.exit(2);
}
if (command === 'write') await write(dir, values.mode, Number(values.events), Number(values.days), Number(values.batch));
else await serve(dir, Number(values.port), values['with-node']);
