import { AuditStore } from '@auditlake/store';
import { startAuditNode } from '@auditlake/server';
import { resolveConfig, validateEvent } from '@auditlake/model';
import { createEventGenerator, mulberry32 } from '@auditlake/testkit';
import { existsSync, writeFileSync, readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
const DIR = '/tmp/vprof/u1m'; const DAY = 86400000;
const N = 1_000_000, DAYS = 30;
let meta;
if (!existsSync(DIR + '/meta.json')) {
  const endTs = Date.now();
  const store = await AuditStore.open({ location: DIR + '/data/store' });
  const gen = createEventGenerator({ seed: 20250101, startTs: endTs - DAYS * DAY, spanMs: DAYS * DAY, count: N, eventIds: true });
  for (let l = 0; l < N; l += 5000) {
    const now = Date.now(); const ids = new Set();
    const evs = gen.batch(5000).map((r, i) => { const e = validateEvent(r, i, { nowMs: now }); ids.add(e.eventId); return e; });
    await store.append(evs, { freshIds: ids });
  }
  await store.close();
  meta = { endTs, users: gen.users };
  writeFileSync(DIR + '/meta.json', JSON.stringify(meta));
  console.log('loaded');
} else meta = JSON.parse(readFileSync(DIR + '/meta.json', 'utf8'));
const node = await startAuditNode({ dataDir: DIR + '/data', host: '127.0.0.1', port: 0, adminToken: 'bench', logger: false, config: resolveConfig(new Map()) });
const url = node.url ?? `http://127.0.0.1:${node.port}`;
const random = mulberry32(7);
const weekFrom = meta.endTs - 7 * DAY;
async function one() {
  const user = meta.users[Math.floor(random() * meta.users.length)];
  const t = performance.now();
  const res = await fetch(`${url}/admin/audit?user=${encodeURIComponent(user)}&from=${weekFrom}&to=${meta.endTs - 1}&limit=200`, { headers: { authorization: 'Token bench' } });
  const body = await res.json();
  if (res.status !== 200) throw new Error(JSON.stringify(body));
  return [performance.now() - t, body.events?.length ?? body.count];
}
for (let i = 0; i < 3000; i++) await one();
const prof = process.env.PROF === '1';
let s; if (prof) { s = new Session(); s.connect(); await s.post('Profiler.enable'); await s.post('Profiler.start'); }
const ms = []; let n = 0;
for (let i = 0; i < 500; i++) { const [m, c] = await one(); ms.push(m); n += c; }
if (prof) { const { profile } = await s.post('Profiler.stop'); writeFileSync('/tmp/vprof/user.cpuprofile', JSON.stringify(profile)); }
ms.sort((a, b) => a - b);
console.log('p50', ms[250].toFixed(2), 'p95', ms[475].toFixed(2), 'avg events', n / 500);
await node.close();
