// Goal: a tier location's place is where its objects are — mode, the connection's endpoint, bucket and prefix — so two names of one place compare equal and two places that only share names do not: another spelling of the path, a second connection to one endpoint, one catalog over another's warehouse are one place; AWS partitions, other endpoints and connections no longer configured are apart unless recorded with their endpoint.
import type { S3ConnectionConfig } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { S3Connections } from '../src/s3-connections.js';
import { readTieredLocations, recordTieredLocation, tieredLocationKey, tieredLocationPlace, TIERED_LOCATIONS_META, type TieredLocation } from '../src/tiered-location.js';

const config = (id: string, endpoint: string, region = 'us-east-1'): [string, S3ConnectionConfig] => [id, { id, endpoint, region, accessKeyId: 'k', secretAccessKey: 's', forcePathStyle: true }];
const connections = new S3Connections(
  new Map([
    config('minio', 'http://Minio.Local:9000/'),
    config('minio-rotated', 'http://minio.local:9000'),
    config('other', 'http://minio.local:9001'),
    config('aws-east', '', 'us-east-1'),
    config('aws-west', '', 'eu-west-1'),
    config('aws-china', '', 'cn-north-1'),
    config('aws-gov', '', 'us-gov-west-1'),
  ]),
);
const place = (location: TieredLocation) => tieredLocationPlace(location, connections);
const parquet = (path: string, connectionId: string): TieredLocation => ({ mode: 'parquet', path, connectionId });

describe('tieredLocationPlace', () => {
  it('is one place for another spelling of the path and for another connection to the same endpoint', () => {
    expect(place(parquet('s3://bkt/p/', 'minio-rotated'))).toBe(place(parquet('s3://bkt/p', 'minio')));
    const table = (identifier: string, location: string): TieredLocation => ({ mode: 'iceberg', path: identifier, location, connectionId: 'minio' });
    expect(place(table('cat2.ops.events', 's3://bkt/wh/ops/events/'))).toBe(place(table('cat.ops.events', 's3://bkt/wh/ops/events')));
  });

  it('keeps apart other prefixes, buckets, modes, endpoints, AWS partitions and a connection no longer configured', () => {
    const base = place(parquet('s3://bkt/p', 'minio'));
    expect(place(parquet('s3://bkt/p2', 'minio'))).not.toBe(base);
    expect(place(parquet('s3://cbkt/p', 'minio'))).not.toBe(base);
    expect(place({ mode: 'iceberg', path: 'cat.p.t', location: 's3://bkt/p', connectionId: 'minio' })).not.toBe(base);
    expect(place(parquet('s3://bkt/p', 'other'))).not.toBe(base);
    expect(place(parquet('s3://bkt/p', 'gone'))).not.toBe(base);
    expect(place(parquet('s3://bkt/p', 'aws-west'))).toBe(place(parquet('s3://bkt/p', 'aws-east')));
    expect(new Set(['aws-east', 'aws-china', 'aws-gov'].map((id) => place(parquet('s3://bkt/p', id)))).size).toBe(3);
  });

  it('takes the recorded endpoint of a connection no longer configured, the configured one before it (a renamed host)', () => {
    expect(place({ ...parquet('s3://bkt/p', 'gone'), endpoint: 'http://minio.local:9000' })).toBe(place(parquet('s3://bkt/p', 'minio')));
    expect(place({ ...parquet('s3://bkt/p', 'minio'), endpoint: 'http://old-host:9000' })).toBe(place(parquet('s3://bkt/p', 'minio-rotated')));
    expect(place({ ...parquet('s3://bkt/p', 'gone'), endpoint: 'http://elsewhere:9000' })).not.toBe(place(parquet('s3://bkt/p', 'minio')));
  });
});

describe('recordTieredLocation', () => {
  it('adds a location with its endpoint, fills in the endpoint of those recorded without one whose connection is configured, and changes nothing otherwise', () => {
    const a = parquet('s3://bkt/a', 'minio');
    const recorded = recordTieredLocation([], a, connections);
    expect(recorded).toEqual([{ ...a, endpoint: 'http://minio.local:9000' }]);
    expect(recordTieredLocation(recorded!, a, connections)).toBeUndefined();
    const older = [parquet('s3://bkt/old', 'gone'), parquet('s3://bkt/a', 'other')];
    expect(recordTieredLocation(older, older[1]!, connections)).toEqual([older[0], { ...older[1], endpoint: 'http://minio.local:9001' }]);
    expect(recordTieredLocation([older[0]!], older[0]!, connections)).toBeUndefined();
    // The endpoint is not part of the description.
    expect(tieredLocationKey({ ...a, endpoint: 'x' })).toBe(tieredLocationKey(a));
    // A connection given a new address moves the recorded endpoint with it: removed later, its
    // locations are still the place the new address names (a host renamed, then credentials rotated).
    const renamed = recordTieredLocation([{ ...a, endpoint: 'http://old-host:9000' }], a, connections);
    expect(renamed).toEqual([{ ...a, endpoint: 'http://minio.local:9000' }]);
    const rotated = new S3Connections(new Map([config('rotated', 'http://minio.local:9000')]));
    expect(tieredLocationPlace(renamed![0]!, rotated)).toBe(tieredLocationPlace(parquet('s3://bkt/a', 'rotated'), rotated));
  });
});

describe('readTieredLocations', () => {
  it('lists each description once: a copy an older version recorded again without the endpoint is folded into the first', async () => {
    const a = parquet('s3://bkt/a', 'minio');
    const b = parquet('s3://bkt/b', 'minio');
    const meta = (list: TieredLocation[]) => ({ getMeta: async <T>(name: string) => (name === TIERED_LOCATIONS_META ? (list as T) : undefined) });
    expect(await readTieredLocations(meta([a, { ...b, endpoint: 'e' }, { ...a, endpoint: 'e' }]))).toEqual([{ ...a, endpoint: 'e' }, { ...b, endpoint: 'e' }]);
    expect(await readTieredLocations(meta([{ ...a, endpoint: 'e' }, a]))).toEqual([{ ...a, endpoint: 'e' }]);
    const distinct = [a, b];
    expect(await readTieredLocations(meta(distinct))).toBe(distinct);
  });
});
