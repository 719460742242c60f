import { describe, expect, it } from 'vitest';
import { measuredAtMostEvery, NodeMetrics } from '../src/metrics.js';

describe('measuredAtMostEvery', () => {
  it('measures again only once the last measurement is maxAgeMs old', async () => {
    let nowMs = 1_000;
    let calls = 0;
    const size = measuredAtMostEvery(15_000, async () => ++calls * 100, () => nowMs);
    expect(await size()).toBe(100);
    nowMs += 14_999;
    expect(await size()).toBe(100);
    expect(calls).toBe(1);
    nowMs += 1;
    expect(await size()).toBe(200);
    expect(calls).toBe(2);
  });

  it('shares a measurement under way, and does not keep a failed one', async () => {
    let calls = 0;
    let fail = true;
    const size = measuredAtMostEvery(15_000, async () => {
      calls++;
      if (fail) throw new Error('readdir failed');
      return 42;
    }, () => 0);
    const [a, b] = await Promise.allSettled([size(), size()]);
    expect(a.status).toBe('rejected');
    expect(b.status).toBe('rejected');
    expect(calls).toBe(1);
    fail = false;
    expect(await size()).toBe(42);
    expect(calls).toBe(2);
  });
});

describe('NodeMetrics', () => {
  it('reports the store size without measuring the store at every scrape', async () => {
    let measured = 0;
    const metrics = new NodeMetrics(async () => {
      measured++;
      return 12_345;
    }, () => 0);
    for (let i = 0; i < 3; i++) expect(await metrics.registry.metrics()).toMatch(/^auditlake_store_size_bytes 12345$/m);
    expect(measured).toBe(1);
  });

  it("reports LevelDB's memory estimate as read at each scrape", async () => {
    let bytes = 1_000;
    const metrics = new NodeMetrics(async () => 0, () => 0, () => bytes);
    expect(await metrics.registry.metrics()).toMatch(/^auditlake_leveldb_memory_bytes 1000$/m);
    bytes = 2_000;
    expect(await metrics.registry.metrics()).toMatch(/^auditlake_leveldb_memory_bytes 2000$/m);
  });
});
