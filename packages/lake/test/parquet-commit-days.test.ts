// Goal: a Parquet commit puts its batch's day files side by side, bounded, not one after another: a batch spread over many event days (late events, or a sender timing each event on a day of its own) costs a file per day, and in sequence that was 1,500 days in 12 s on a loopback endpoint. Every event is in the committed files once, each under its day.
import type { StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { twoDayEvents, useEmbeddedS3 } from '../src/testing/index.js';
import { commitParquetBatch, liveParquetFiles, OBJECT_REQUESTS_IN_FLIGHT_MAX, readParquetLog, type S3Location } from '../src/index.js';

const BUCKET = 'days';
const T0 = Date.UTC(2026, 4, 1);
const DAY_MS = 86_400_000;
const CREDENTIALS = { accessKeyId: 'ALCOMMITDAYS00000001', secretAccessKey: 'commit-days-secret-0123456789abcdefghij' };
const s3 = useEmbeddedS3('commit-days-', BUCKET, CREDENTIALS);

/** `count` events, each on a day of its own, ingested in seq order. */
function eventsOnDaysOfTheirOwn(count: number): StoredEvent[] {
  return twoDayEvents(T0, 1, count).map((event, i) => ({ ...event, timestamp: T0 - i * DAY_MS }));
}

describe('a Parquet commit of a batch over many days', () => {
  it('puts the day files side by side, at most OBJECT_REQUESTS_IN_FLIGHT_MAX at once, and commits each event once under its day', async () => {
    const location: S3Location = { bucket: BUCKET, prefix: 'spread' };
    const objects = s3.connections.bucket('s3', BUCKET);
    const put = objects.put.bind(objects);
    let inFlight = 0;
    let most = 0;
    objects.put = async (...args: Parameters<typeof put>) => {
      most = Math.max(most, ++inFlight);
      try {
        return await put(...args);
      } finally {
        inFlight--;
      }
    };
    const batch = eventsOnDaysOfTheirOwn(40);
    await commitParquetBatch(objects, location, batch, { term: 1, nowMs: T0, afterSeq: 0, mayCommit: () => true });
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(OBJECT_REQUESTS_IN_FLIGHT_MAX);
    const files = liveParquetFiles(await readParquetLog(objects, location)).files;
    expect(files).toHaveLength(40);
    expect(files.every((file) => file.rows === 1 && file.key.includes(`event_date=${file.eventDate}/`))).toBe(true);
    expect(new Set(files.map((file) => file.eventDate)).size).toBe(40);
  });
});
