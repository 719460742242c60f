// Goal: resolveConfig yields the reference defaults, parses every group, and refuses bad or unknown keys with AUDIT_CONFIG_INVALID.
import { describe, expect, it } from 'vitest';
import { AuditError, AuditErrorCode } from '../src/audit-error.js';
import { CONFIG_KEYS, resolveConfig } from '../src/config.js';
import { parseProperties } from '../src/properties.js';
import { SETTING_KEYS } from '../src/settings.js';

function configRefusal(entries: Array<[string, string]>): AuditError {
  try {
    resolveConfig(new Map(entries));
  } catch (err) {
    expect(err).toBeInstanceOf(AuditError);
    expect((err as AuditError).code).toBe(AuditErrorCode.CONFIG_INVALID);
    return err as AuditError;
  }
  throw new Error(`expected AUDIT_CONFIG_INVALID for ${JSON.stringify(entries)}`);
}

describe('resolveConfig defaults', () => {
  it('equal the reference defaults and the contract additions', () => {
    const config = resolveConfig();
    expect(config).toMatchObject({
      retentionDays: 90,
      readEnabled: true,
      readSampleRate: 1.0,
      tierMode: 'none',
      tierIcebergTable: 'ice.ops.audit_events',
      tierParquetPath: '',
      tierConnectionId: '',
      tierRetainLocalDays: 7,
      tierIntervalMs: 300_000,
      tierBatchSize: 5000,
      tierSettleMs: 2000,
      viewerMaxPage: 5000,
      maintenanceEnabled: true,
      maintenanceCron: '0 * * * *',
      maintenanceSnapshotRetainLast: 24,
      maintenanceRemoveOrphanFiles: true,
      forwardMaxAttempts: 5,
      forwardQueueCapacity: 10_000,
      leaseTtlMs: 3000,
      tierBackoffInitialMs: 30_000,
      tierBackoffMaxMs: 600_000,
      jwtSecret: '',
      embeddedS3AccessKey: '',
      embeddedS3SecretKey: '',
      storeCacheBytes: 256 * 1024 * 1024,
    });
    expect(config.redactKeys).toEqual(['password', 'passwd', 'pwd', 'passphrase', 'secret', 'token', 'credential', 'access-key', 'secret-key', 'session-token', 'api-key', 'private-key', 'authorization', 'cookie', 'amz-signature', 'goog-signature', 'sig']);
    expect(config.tokens).toEqual([]);
    expect(config.accessKeys).toEqual([]);
    expect(config.s3Connections.size).toBe(0);
    expect(config.icebergCatalogs.size).toBe(0);
  });

  it('uses the auditlake.* spelling of each reference key', () => {
    // One name for a runtime setting and its configuration: audit.retention.days.
    expect(CONFIG_KEYS.retentionDays.key).toBe('auditlake.audit.retention.days');
    expect(CONFIG_KEYS.readSampleRate.key).toBe('auditlake.audit.read.sample.rate');
    expect(CONFIG_KEYS.tierSettleMs.key).toBe('auditlake.audit.tier.ingest.settle.ms');
    expect(CONFIG_KEYS.viewerMaxPage.key).toBe('auditlake.audit.viewer.max.page');
    expect(CONFIG_KEYS.forwardQueueCapacity.key).toBe('auditlake.metadata.forward.queue.capacity');
    expect(CONFIG_KEYS.leaseTtlMs.key).toBe('auditlake.cluster.lease.ttl.ms');
  });
});

describe('resolveConfig values', () => {
  it('parses overrides into their types, trimming surrounding spaces', () => {
    const config = resolveConfig(
      new Map([
        ['auditlake.audit.log.retention.days', ' 1 '],
        ['auditlake.audit.read.enabled', 'FALSE'],
        ['auditlake.audit.read.sample.rate', '0.1'],
        ['auditlake.audit.tier.mode', 'iceberg'],
        ['auditlake.audit.tier.iceberg.table', ' local.ops.audit_events '],
        ['auditlake.audit.tier.retain.local.days', '0'],
        ['auditlake.audit.tier.interval.ms', '50'],
        ['auditlake.audit.tier.batch.size', '100'],
        ['auditlake.audit.tier.ingest.settle.ms', '0'],
        ['auditlake.cluster.lease.ttl.ms', '500'],
        ['auditlake.audit.tier.backoff.initial.ms', '10'],
        ['auditlake.audit.tier.backoff.max.ms', '10'],
        ['auditlake.store.cache.bytes', '1048576'],
      ]),
    );
    expect(config).toMatchObject({
      retentionDays: 1,
      readEnabled: false,
      readSampleRate: 0.1,
      tierMode: 'iceberg',
      tierIcebergTable: 'local.ops.audit_events',
      tierRetainLocalDays: 0,
      tierIntervalMs: 50,
      tierBatchSize: 100,
      tierSettleMs: 0,
      leaseTtlMs: 500,
      tierBackoffInitialMs: 10,
      tierBackoffMaxMs: 10,
      storeCacheBytes: 1_048_576,
    });
  });

  it('configures each runtime setting audit.x as auditlake.audit.x, and takes the reference name of the retention cap too', () => {
    for (const key of SETTING_KEYS) expect(Object.values(CONFIG_KEYS).some((s) => s.key === `auditlake.${key}`)).toBe(true);
    expect(resolveConfig(new Map([['auditlake.audit.retention.days', '12']])).retentionDays).toBe(12);
    expect(resolveConfig(new Map([['auditlake.audit.log.retention.days', '13']])).retentionDays).toBe(13);
    expect(() => resolveConfig(new Map([['auditlake.audit.log.retention.days', 'x']]))).toThrow('auditlake.audit.log.retention.days must be a positive integer: x');
    expect(() => resolveConfig(new Map([['auditlake.audit.retention.days', '12'], ['auditlake.audit.log.retention.days', '13']]))).toThrow(
      'auditlake.audit.retention.days and auditlake.audit.log.retention.days name the same setting: set only auditlake.audit.retention.days',
    );
  });

  it('bounds a maintenance run\'s compaction passes by auditlake.audit.tier.maintenance.compaction.time.budget.ms: 15 minutes unless set, a positive integer', () => {
    expect(resolveConfig().maintenanceCompactionTimeBudgetMs).toBe(900_000);
    expect(resolveConfig(new Map([['auditlake.audit.tier.maintenance.compaction.time.budget.ms', '60000']])).maintenanceCompactionTimeBudgetMs).toBe(60_000);
    for (const bad of ['0', '-1', 'soon']) {
      expect(configRefusal([['auditlake.audit.tier.maintenance.compaction.time.budget.ms', bad]]).message).toBe(`auditlake.audit.tier.maintenance.compaction.time.budget.ms must be a positive integer: ${bad}`);
    }
  });

  it('ignores keys outside auditlake.*', () => {
    expect(resolveConfig(new Map([['ontul.audit.read.enabled', 'maybe'], ['java.home', '/x']])).readEnabled).toBe(true);
  });

  it.each([
    ['auditlake.audit.log.retention.days', '0'],
    ['auditlake.audit.log.retention.days', 'abc'],
    ['auditlake.audit.log.retention.days', '1.5'],
    ['auditlake.audit.log.retention.days', ''],
    ['auditlake.audit.read.enabled', 'yes'],
    ['auditlake.audit.read.sample.rate', '1.5'],
    ['auditlake.audit.read.sample.rate', '-0.1'],
    ['auditlake.audit.tier.mode', 'icebreg'],
    ['auditlake.audit.tier.retain.local.days', '-1'],
    ['auditlake.audit.tier.interval.ms', '0'],
    ['auditlake.audit.tier.batch.size', '-5'],
    ['auditlake.audit.viewer.max.page', '0'],
    ['auditlake.metadata.forward.max.attempts', 'many'],
    ['auditlake.cluster.lease.ttl.ms', '3s'],
    ['auditlake.audit.tier.maintenance.enabled', 'on'],
    ['auditlake.audit.redact.keys', 'pass word'],
    ['auditlake.audit.redact.keys', 'a,,b'],
    ['auditlake.store.cache.bytes', '0'],
    ['auditlake.store.cache.bytes', '256MiB'],
  ])('refuses %s=%j, naming key and value', (key, value) => {
    const message = configRefusal([[key, value]]).message;
    expect(message.startsWith(`${key} `)).toBe(true);
    expect(message.endsWith(`: ${value}`)).toBe(true);
  });

  it('refuses an unknown auditlake.* key, naming it', () => {
    expect(configRefusal([['auditlake.audit.tier.bacth.size', '10']]).message).toContain('auditlake.audit.tier.bacth.size');
    expect(configRefusal([['auditlake.audit.retention.dayz', '10']]).message).toContain('auditlake.audit.retention.dayz');
  });

  it('takes the embedded S3 key pair only as a pair', () => {
    expect(resolveConfig(new Map([['auditlake.embedded.s3.access.key', 'AK'], ['auditlake.embedded.s3.secret.key', 'SK']]))).toMatchObject({ embeddedS3AccessKey: 'AK', embeddedS3SecretKey: 'SK' });
    expect(configRefusal([['auditlake.embedded.s3.secret.key', 'SK']]).message).toBe('auditlake.embedded.s3.access.key and auditlake.embedded.s3.secret.key are set together or not at all');
  });

  it('refuses an orphan minimum age below one hour, naming the key', () => {
    expect(() => resolveConfig(new Map([['auditlake.audit.tier.maintenance.orphan.min.age.ms', '0']]))).toThrow(
      'auditlake.audit.tier.maintenance.orphan.min.age.ms must be at least 3600000 (1 hour; younger unreferenced files may belong to a commit still being written): 0',
    );
    expect(resolveConfig(new Map([['auditlake.audit.tier.maintenance.orphan.min.age.ms', '3600000']])).maintenanceOrphanMinAgeMs).toBe(3_600_000);
  });

  it('refuses a backoff maximum below the initial pause', () => {
    configRefusal([['auditlake.audit.tier.backoff.initial.ms', '1000'], ['auditlake.audit.tier.backoff.max.ms', '999']]);
  });
});

describe('auth credentials', () => {
  it('parses auth.tokens as name:role:token entries; a token may contain colons', () => {
    const config = resolveConfig(new Map([['auditlake.auth.tokens', 'root:admin:s3cret, ci:ingest:a:b:c']]));
    expect(config.tokens).toEqual([
      { name: 'root', role: 'admin', secret: 's3cret' },
      { name: 'ci', role: 'ingest', secret: 'a:b:c' },
    ]);
  });

  it('parses auth.access.keys the same way', () => {
    expect(resolveConfig(new Map([['auditlake.auth.access.keys', 'AKID:ingest:secret']])).accessKeys).toEqual([{ name: 'AKID', role: 'ingest', secret: 'secret' }]);
  });

  it.each([['root:admin'], ['root'], [':admin:x'], ['root::x'], ['a:admin:x,,b:ingest:y']])('refuses the malformed entry list %j', (value) => {
    configRefusal([['auditlake.auth.tokens', value]]);
  });

  it('refuses a role other than admin or ingest, naming the entry but never repeating its parts: an entry written name:secret:role has the secret there', () => {
    const refusal = configRefusal([['auditlake.auth.tokens', 'root:admin:x, trino:Sup3rS3cretTok:ingest']]);
    expect(refusal.message).toBe(
      'auditlake.auth.tokens entry 2 (trino): its second part must be the role, admin or ingest (entries are name:role:secret; the part is not repeated here, as it may be a secret in the wrong place)',
    );
    expect(configRefusal([['auditlake.auth.access.keys', 'spark:s3cret-key:ingest']]).message).not.toContain('s3cret-key');
  });
});

describe('host names', () => {
  it('parses auditlake.http.allowed.hosts as lower-case names without a trailing dot; none by default', () => {
    expect(resolveConfig(new Map()).allowedHosts).toEqual([]);
    expect(resolveConfig(new Map([['auditlake.http.allowed.hosts', ' Metrics.Example.com., prom_1,auditlake-2 ']])).allowedHosts).toEqual(['metrics.example.com', 'prom_1', 'auditlake-2']);
  });

  it.each([['a,,b'], ['host:9090'], ['http://host'], ['*.example.com'], ['host/path'], ['-bad.example'], ['a..b']])('refuses %j, naming the key', (value) => {
    expect(configRefusal([['auditlake.http.allowed.hosts', value]]).message).toMatch(/^auditlake\.http\.allowed\.hosts must (be a comma-separated list of host names|list host names only)/);
  });
});

describe('sourceIds bound to principals', () => {
  it('parses auditlake.ingest.sources.<principal> as a list of sourceIds; none configured: unbound', () => {
    expect(resolveConfig(new Map()).sourceBindings.size).toBe(0);
    const config = resolveConfig(new Map([['auditlake.ingest.sources.trino-writer', ' plugin-a , plugin-b,plugin-a'], ['auditlake.ingest.sources.ops.team', 'Ops']]));
    expect([...config.sourceBindings]).toEqual([['trino-writer', ['plugin-a', 'plugin-b']], ['ops.team', ['Ops']]]);
    // One source may be bound to two principals (a credential being replaced).
    expect(resolveConfig(new Map([['auditlake.ingest.sources.old', 'a'], ['auditlake.ingest.sources.new', 'a']])).sourceBindings.get('new')).toEqual(['a']);
  });

  it.each<[Array<[string, string]>, RegExp]>([
    [[['auditlake.ingest.sources.', 'a']], /must be auditlake\.ingest\.sources\.<principal>/],
    [[['auditlake.ingest.sources.p', '']], /auditlake\.ingest\.sources\.p must be a comma-separated list of non-empty sourceIds, got ""/],
    [[['auditlake.ingest.sources.p', 'a,,b']], /non-empty sourceIds, got "a,,b"/],
    [[['auditlake.ingest.sources.p', 'x'.repeat(257)]], /at most 256 characters, got 257/],
    [[['auditlake.ingest.sources.p', 'a\u200bb']], /holds a control or invisible character/],
    [[['auditlake.ingest.sources.p', 'a\u0007']], /holds a control or invisible character/],
    [[['auditlake.ingest.sources.p', 'a\ud800']], /lone surrogate/],
    [[['auditlake.ingest.sources.p', 'Plugin'], ['auditlake.ingest.sources.q', 'plugin']], /sourceIds "Plugin" and "plugin" read alike/],
    [[['auditlake.ingest.sources.p', 'plugin a,plugina']], /sourceIds "plugin a" and "plugina" read alike/],
    [[['auditlake.ingest.sources.p', '\uff50lugin,plugin']], /read alike/],
  ])('refuses %j', (entries, message) => {
    expect(configRefusal(entries).message).toMatch(message);
  });
});

describe('S3 connections and Iceberg catalogs', () => {
  it('groups s3.connections.<id>.* by id, with defaults for region and path style', () => {
    const config = resolveConfig(
      new Map([
        ['auditlake.s3.connections.local.endpoint', 'http://127.0.0.1:7071'],
        ['auditlake.s3.connections.local.accessKeyId', 'AK'],
        ['auditlake.s3.connections.local.secretAccessKey', 'SK'],
        ['auditlake.s3.connections.aws.region', 'eu-west-1'],
        ['auditlake.s3.connections.aws.forcePathStyle', 'false'],
        ['auditlake.s3.connections.my.dotted.endpoint', 'http://h'],
      ]),
    );
    expect(config.s3Connections.get('local')).toEqual({
      id: 'local', endpoint: 'http://127.0.0.1:7071', region: 'us-east-1', accessKeyId: 'AK', secretAccessKey: 'SK', forcePathStyle: true,
    });
    expect(config.s3Connections.get('aws')).toEqual({ id: 'aws', endpoint: '', region: 'eu-west-1', accessKeyId: '', secretAccessKey: '', forcePathStyle: false });
    expect(config.s3Connections.get('my.dotted')?.endpoint).toBe('http://h');
    expect([...config.s3Connections.keys()].sort()).toEqual(['aws', 'local', 'my.dotted']);
  });

  it('refuses an unknown connection field, a bad forcePathStyle and a key without a field', () => {
    expect(configRefusal([['auditlake.s3.connections.local.bucket', 'x']]).message).toContain('auditlake.s3.connections.local.bucket');
    expect(configRefusal([['auditlake.s3.connections.local.forcePathStyle', 'maybe']]).message).toContain('forcePathStyle');
    configRefusal([['auditlake.s3.connections.local', 'x']]);
  });

  it('groups iceberg.catalogs.<name>.* by name', () => {
    const config = resolveConfig(
      new Map([
        ['auditlake.iceberg.catalogs.local.warehouse', 's3://auditlake/warehouse'],
        ['auditlake.iceberg.catalogs.local.connectionId', 'local'],
        ['auditlake.iceberg.catalogs.ice.warehouse', 's3://lake/wh'],
      ]),
    );
    expect(config.icebergCatalogs.get('local')).toEqual({ name: 'local', warehouse: 's3://auditlake/warehouse', connectionId: 'local' });
    expect(config.icebergCatalogs.get('ice')).toEqual({ name: 'ice', warehouse: 's3://lake/wh', connectionId: '' });
  });

  it('refuses a warehouse that is not s3:// and an unknown catalog field', () => {
    expect(configRefusal([['auditlake.iceberg.catalogs.local.warehouse', '/tmp/wh']]).message).toContain('/tmp/wh');
    configRefusal([['auditlake.iceberg.catalogs.local.connectionId', 'local']]); // no warehouse at all
    expect(configRefusal([['auditlake.iceberg.catalogs.local.warehouse', 's3://b/w'], ['auditlake.iceberg.catalogs.local.uri', 'x']]).message).toContain(
      'auditlake.iceberg.catalogs.local.uri',
    );
  });
});

describe('properties file to configuration', () => {
  it('resolves what parseProperties reads', () => {
    const config = resolveConfig(
      parseProperties(
        [
          '# tier to the embedded endpoint',
          'auditlake.audit.tier.mode = iceberg',
          'auditlake.audit.tier.iceberg.table = local.ops.audit_events',
          'auditlake.iceberg.catalogs.local.warehouse = s3://auditlake/warehouse',
          'auditlake.iceberg.catalogs.local.connectionId = local',
          'auditlake.s3.connections.local.endpoint = http://127.0.0.1:7071',
          'auditlake.auth.tokens = root:admin:a,\\',
          '   ci:ingest:b',
          'auditlake.audit.tier.batch.size = 10',
          'auditlake.audit.tier.batch.size = 20',
        ].join('\n'),
      ),
    );
    expect(config.tierMode).toBe('iceberg');
    expect(config.tierBatchSize).toBe(20);
    expect(config.tokens.map((t) => t.name)).toEqual(['root', 'ci']);
    expect(config.icebergCatalogs.get('local')?.connectionId).toBe('local');
    expect(config.s3Connections.get('local')?.endpoint).toBe('http://127.0.0.1:7071');
  });
});
