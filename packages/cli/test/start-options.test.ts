// Goal: `auditlake start` arguments become a validated configuration, the properties file first and --set over it.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { parseStartOptions } from '../src/index.js';
import { shownRedisUrl } from '../src/redis-url.js';

describe('parseStartOptions', () => {
  it('uses the contract defaults', () => {
    const options = parseStartOptions([]);
    expect(options).toMatchObject({ dataDir: './data', host: '127.0.0.1', port: 7070, logLevel: 'info' });
    expect(options.config.tierBatchSize).toBe(5000);
    expect(options.nodeId).toBeUndefined();
  });

  it('--embedded-s3 defaults to the HTTP port + 1, signed requests only', () => {
    expect(parseStartOptions(['--embedded-s3', '--port', '8000'])).toMatchObject({ embeddedS3Port: 8001, embeddedS3PublicRead: false });
    expect(parseStartOptions(['--embedded-s3', '--embedded-s3-public-read'])).toMatchObject({ embeddedS3Port: 7071, embeddedS3PublicRead: true });
    // The last port is fine for the HTTP API when the endpoint's port is named.
    expect(parseStartOptions(['--embedded-s3', '--port', '65535', '--embedded-s3-port', '9000'])).toMatchObject({ port: 65535, embeddedS3Port: 9000 });
  });

  it('reads --config, then applies every --set in order (later wins)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'auditlake-cli-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'a.properties');
    await writeFile(file, 'auditlake.audit.tier.batch.size=100\nauditlake.audit.viewer.max.page: 7\n');
    const options = parseStartOptions(['--config', file, '--set', 'auditlake.audit.tier.batch.size=200', '--set', 'auditlake.audit.tier.batch.size=300', '--node-id', 'n1', '--advertise', 'http://lb:7070', '--port', '0']);
    expect(options.config.tierBatchSize).toBe(300);
    expect(options.config.viewerMaxPage).toBe(7);
    expect(options).toMatchObject({ nodeId: 'n1', advertiseUrl: 'http://lb:7070', port: 0 });
  });

  it('refuses a --config file holding an auditlake key without its prefix, and passes over other programs\' keys', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'auditlake-cli-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const shared = join(dir, 'shared.properties');
    await writeFile(shared, 'spark.sql.shuffle.partitions=8\nauditlake.audit.tier.batch.size=100\n');
    expect(parseStartOptions(['--config', shared]).config.tierBatchSize).toBe(100);
    const typo = join(dir, 'typo.properties');
    await writeFile(typo, 'spark.sql.shuffle.partitions=8\naudit.retention.days=30\n');
    expect(() => parseStartOptions(['--config', typo])).toThrow(
      new RegExp(`^--config ${typo.replaceAll('.', '\\.')}: audit\\.retention\\.days: unknown configuration key; every key starts with auditlake\\. \\(did you mean auditlake\\.audit\\.retention\\.days\\?\\)`),
    );
  });

  it('takes the cluster secret from AUDITLAKE_CLUSTER_SECRET, and refuses a blank one rather than run unsigned, without repeating it (review)', async () => {
    const secret = 'a-cluster-secret-of-enough-characters-0123';
    expect(parseStartOptions([], { AUDITLAKE_CLUSTER_SECRET: secret }).config.clusterSecret).toBe(secret);
    expect(parseStartOptions([]).config.clusterSecret).toBe('');
    for (const blank of ['', ' '.repeat(40), '\n']) {
      expect(() => parseStartOptions([], { AUDITLAKE_CLUSTER_SECRET: blank })).toThrow(
        "AUDITLAKE_CLUSTER_SECRET is set but empty: give it the cluster's secret (32 or more characters), or unset it to run without one",
      );
    }
    // An empty setting in a shared file or a --set over a good secret in the environment: refused, not "no secret".
    const dir = await mkdtemp(join(tmpdir(), 'auditlake-cli-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'shared.properties');
    await writeFile(file, 'auditlake.cluster.secret=\n');
    for (const args of [['--config', file], ['--set', 'auditlake.cluster.secret=   ']]) {
      const refused = (() => {
        try {
          parseStartOptions(args, { AUDITLAKE_CLUSTER_SECRET: secret });
          return undefined;
        } catch (err) {
          return err as Error & { code: string };
        }
      })();
      expect(refused?.message).toMatch(/auditlake\.cluster\.secret is set but empty: give every node the same secret of 32 or more characters, or remove the setting to run without one$/);
      expect(refused?.code).toBe('AUDIT_CONFIG_INVALID');
      expect(refused?.message).not.toContain(secret);
    }
  });

  const refusals: Array<[string[], RegExp]> = [
    [['--set', 'novalue'], /^--set must be key=value: novalue/],
    [['--port', '70000'], /^--port must be a port number from 0 to 65535: 70000/],
    [['--set', 'auditlake.audit.read.sample.rate=2'], /^auditlake\.audit\.read\.sample\.rate must be a number from 0\.0 to 1\.0: 2$/],
    [['extra'], /Unexpected argument 'extra'/],
    [['--embedded-s3-public-read'], /^--embedded-s3-public-read needs --embedded-s3/],
    // A key without the auditlake. prefix was dropped without a word: the setting never applied.
    [['--set', 'audit.retention.days=30'], /^--set audit\.retention\.days: unknown configuration key; every key starts with auditlake\. \(did you mean auditlake\.audit\.retention\.days\?\)/],
    [['--config', '/dev/null', '--set', 'tier.batch.size=5'], /^--set tier\.batch\.size: unknown configuration key; every key starts with auditlake\. \(did you mean auditlake\.audit\.tier\.batch\.size\?\)/],
    [['--set', 'colour=blue'], /^--set colour: unknown configuration key; every key starts with auditlake\.\n/],
    // The embedded endpoint's default port is --port + 1: 65536 does not exist.
    [['--port', '65535', '--embedded-s3'], /^--embedded-s3 listens on the --port \+ 1, and --port 65535 leaves no port after it: give --embedded-s3-port N, or a lower --port/],
    // Both on one port: the second listener would fail at start with an address-in-use error that names neither option.
    [['--port', '9100', '--embedded-s3', '--embedded-s3-port', '9100'], /^--embedded-s3-port 9100 is also --port: the HTTP API and the embedded S3 endpoint need a port each/],
    [['--embedded-s3', '--set', 'auditlake.embedded.s3.access.key=AK'], /^auditlake\.embedded\.s3\.access\.key and auditlake\.embedded\.s3\.secret\.key are set together or not at all$/],
  ];
  for (const [args, message] of refusals) {
    it(`refuses ${args.join(' ')} with a coded error naming it`, () => {
      expect(() => parseStartOptions(args)).toThrow(message);
      try {
        parseStartOptions(args);
      } catch (err) {
        expect((err as { code: string }).code).toBe('AUDIT_CONFIG_INVALID');
      }
    });
  }
});

describe('the coordinator URL', () => {
  it('comes from AUDITLAKE_COORDINATOR when --coordinator is not given (the option wins), and a bad one is refused without its password', () => {
    expect(parseStartOptions([], { AUDITLAKE_COORDINATOR: 'redis://:s3cret@127.0.0.1:6390' }).coordinatorUrl).toBe('redis://:s3cret@127.0.0.1:6390');
    expect(parseStartOptions(['--coordinator', 'redis://127.0.0.1:6391'], { AUDITLAKE_COORDINATOR: 'redis://:s3cret@127.0.0.1:6390' }).coordinatorUrl).toBe('redis://127.0.0.1:6391');
    expect(parseStartOptions([], { AUDITLAKE_COORDINATOR: '' }).coordinatorUrl).toBeUndefined();
    let message = '';
    try {
      parseStartOptions([], { AUDITLAKE_COORDINATOR: 'http://:s3cret@127.0.0.1:6390' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('AUDITLAKE_COORDINATOR must be a Redis URL (redis://host:port): http://:***@127.0.0.1:6390');
    expect(message).not.toContain('s3cret');
  });

  it('is shown without its password', () => {
    expect(shownRedisUrl('redis://:s3cret@127.0.0.1:6390')).toBe('redis://:***@127.0.0.1:6390');
    expect(shownRedisUrl('rediss://auditlake:s3cret@redis.internal:6380/2')).toBe('rediss://auditlake:***@redis.internal:6380/2');
    expect(shownRedisUrl('redis://127.0.0.1:6390')).toBe('redis://127.0.0.1:6390');
    expect(shownRedisUrl('redis:// broken s3cret@host')).toBe('redis://***@host');
    expect(shownRedisUrl('redis://s3cret@host:6379')).toBe('redis://***@host:6379');
    expect(shownRedisUrl('redis://:p@ss@host:6379/0?name=a@b')).toBe('redis://:***@host:6379/0?name=a@b');
  });

  it('is shown without a password given as a query parameter, which ioredis takes as the password (or the sentinels\')', () => {
    expect(shownRedisUrl('redis://127.0.0.1:6390?password=s3cret')).toBe('redis://127.0.0.1:6390?password=***');
    expect(shownRedisUrl('redis://127.0.0.1:6390/0?db=1&password=s3cret&family=4')).toBe('redis://127.0.0.1:6390/0?db=1&password=***&family=4');
    expect(shownRedisUrl('rediss://:a@h:1/0?sentinelPassword=s3cret&Password=s3cret')).toBe('rediss://:***@h:1/0?sentinelPassword=***&Password=***');
    expect(shownRedisUrl('redis://h:1?p%61ssword=s3cret&%E0=x')).toBe('redis://h:1?p%61ssword=***&%E0=***');
    expect(shownRedisUrl('redis://h:1?name=password')).toBe('redis://h:1?name=password');
    let message = '';
    try {
      parseStartOptions([], { AUDITLAKE_COORDINATOR: 'http://127.0.0.1:6390?password=s3cret' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('AUDITLAKE_COORDINATOR must be a Redis URL');
    expect(message).not.toContain('s3cret');
  });
});
