import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import { redactUrl } from './node-client.js';

export const VERIFY_USAGE = `usage: auditlake verify [--url URL --token T] [--path s3://bucket/prefix]... [--table s3://bucket/table-location]...
                        [--endpoint URL] [--region R] [--access-key-id K] [--secret-access-key S]
                        [--public-key FILE]... [--from-seq N] [--pre-chain-holes] [--threads N] [--json]
  Recomputes every record hash and the record chain over a node's log and/or a tier, checks
  every signed checkpoint, and prints "verified N records, seq A..B, K checkpoints" or the first
  break (altered record, missing records, reordered, truncated tail, bad or unknown signature).
  --url, --token       verify a node's log online (token: an admin token; default
                       $AUDITLAKE_URL and $AUDITLAKE_ADMIN_TOKEN)
  --path               verify a Parquet tier offline, from the bucket alone (repeatable)
  --table              verify an Iceberg table offline, by its location (s3://bucket/warehouse/ns/table)
                       (repeatable: every location the log was tiered to, as one history)
  --endpoint, --region, --access-key-id, --secret-access-key
                       the S3 endpoint and credentials for --path/--table (default
                       $AWS_ENDPOINT_URL, $AWS_REGION or us-east-1, $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY)
  --public-key         a PEM public key to trust (repeatable); then every checkpoint must be
                       signed by one of these, not merely by a key the history shows
  --from-seq           where the history is known to begin (default 1): records before it are
                       not expected
  --pre-chain-holes    the history began before the record chain (a node or tier upgraded from a
                       version without it): seqs missing before the chain began, which such
                       versions deleted by retention without declaring them or tiered without
                       a seq, count as not verifiable instead of missing
  --threads            worker threads that decode and hash records (default: one per
                       core, at most 8); 0 does it all on the main thread
  --json               print the whole report as JSON
  With both --url and a tier, or several tier locations, they are verified as one history:
  after the tier target changed, each location holds part of it (and an erasure record only
  the location current when it was tiered), so give them all.
  Progress (records checked, seq reached, rate) goes to standard error, the verdict to standard output.
exit status: 0 verified, 1 a break was found, 2 usage error`;

/** More worker threads than this only cost memory. */
const THREADS_MAX = 64;
/** The default is one per core up to this: each worker holds its own decoder and a few files. */
const THREADS_DEFAULT_MAX = 8;

export interface TierLocationOption {
  mode: 'parquet' | 'iceberg';
  /** `s3://bucket/prefix` (Parquet) or the table location (Iceberg). */
  location: string;
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

export interface VerifyOptions {
  node?: { url: string; token: string };
  /** Tier locations, verified with the node's log (when given) as one history. */
  tiers: TierLocationOption[];
  publicKeyFiles: string[];
  fromSeq: number;
  /** `--pre-chain-holes`: the operator says the history began before the chain (ChainVerifierOptions.preChainHoles). */
  preChainHoles: boolean;
  /** Worker threads that decode and hash (0: none, all on the main thread). */
  threads: number;
  /** Not a flag: tests lower it (tier-proof.ts, DECLARED_ORDER_HELD_RECORDS_MAX). */
  declaredOrderHeldMax?: number;
  json: boolean;
}

function usageError(message: string): AuditError {
  return new AuditError(AuditErrorCode.BAD_REQUEST, `${message}\n${VERIFY_USAGE}`);
}

/** Parses `auditlake verify` arguments; throws a coded error naming the bad input (exit 2). */
export function parseVerifyOptions(args: string[], env: NodeJS.ProcessEnv): VerifyOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        url: { type: 'string' },
        token: { type: 'string' },
        path: { type: 'string', multiple: true },
        table: { type: 'string', multiple: true },
        endpoint: { type: 'string' },
        region: { type: 'string' },
        'access-key-id': { type: 'string' },
        'secret-access-key': { type: 'string' },
        'public-key': { type: 'string', multiple: true },
        'from-seq': { type: 'string' },
        'pre-chain-holes': { type: 'boolean', default: false },
        threads: { type: 'string' },
        json: { type: 'boolean', default: false },
      },
    });
  } catch (err) {
    throw usageError((err as Error).message);
  }
  const v = parsed.values;
  const locations = [...(v.path ?? []).map((location) => ({ mode: 'parquet' as const, flag: 'path', location })), ...(v.table ?? []).map((location) => ({ mode: 'iceberg' as const, flag: 'table', location }))];
  const url = v.url ?? (locations.length === 0 ? env['AUDITLAKE_URL'] : undefined);
  if (url === undefined && locations.length === 0) throw usageError('name what to verify: --url (a node), --path (a Parquet tier) or --table (an Iceberg table)');
  const options: VerifyOptions = { tiers: [], publicKeyFiles: v['public-key'] ?? [], fromSeq: 1, preChainHoles: v['pre-chain-holes'] === true, threads: Math.min(availableParallelism(), THREADS_DEFAULT_MAX), json: v.json === true };
  if (url !== undefined) {
    if (!/^https?:\/\/[^/]+/.test(url)) throw usageError(`--url must be an http(s) URL: ${redactUrl(url)}`);
    const token = v.token ?? env['AUDITLAKE_ADMIN_TOKEN'];
    if (token === undefined || token === '') throw usageError('--token (or $AUDITLAKE_ADMIN_TOKEN) is required with --url: an admin token');
    options.node = { url, token };
  }
  const seen = new Set<string>();
  for (const { mode, flag, location } of locations) {
    if (!/^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/.*)?$/.test(location)) throw usageError(`--${flag} must be s3://bucket[/prefix]: ${location}`);
    if (seen.has(location)) throw usageError(`${location} is given twice`);
    seen.add(location);
    options.tiers.push({
      mode,
      location,
      endpoint: v.endpoint ?? env['AWS_ENDPOINT_URL'] ?? '',
      region: v.region ?? env['AWS_REGION'] ?? 'us-east-1',
      accessKeyId: v['access-key-id'] ?? env['AWS_ACCESS_KEY_ID'] ?? '',
      secretAccessKey: v['secret-access-key'] ?? env['AWS_SECRET_ACCESS_KEY'] ?? '',
    });
  }
  if (v['from-seq'] !== undefined) {
    const fromSeq = /^\d{1,16}$/.test(v['from-seq']) ? Number(v['from-seq']) : NaN;
    if (!Number.isSafeInteger(fromSeq) || fromSeq < 1) throw usageError(`--from-seq must be a positive integer: ${v['from-seq']}`);
    options.fromSeq = fromSeq;
  }
  if (v.threads !== undefined) {
    const threads = /^\d{1,3}$/.test(v.threads) ? Number(v.threads) : NaN;
    if (!(threads >= 0 && threads <= THREADS_MAX)) throw usageError(`--threads must be an integer from 0 to ${THREADS_MAX}: ${v.threads}`);
    options.threads = threads;
  }
  return options;
}
