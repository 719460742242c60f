import { readFile } from 'node:fs/promises';
import type { KeyObject } from 'node:crypto';
import {
  ChainVerifier,
  CheckedBatchReader,
  mergeCheckedBatches,
  parseSignedCheckpoint,
  readPublicKeyPem,
  type CheckedBatch,
  type CheckedRecord,
  type ChainVerifierOptions,
  type FoundCheckpoint,
  type PrunedRange,
  type ShownKey,
  type VerifyReport,
} from '@auditlake/integrity';
import { AuditError, AuditErrorCode, isAuditError } from '@auditlake/model';
import { NodeClient } from './node-client.js';
import { readTierProof } from './tier-proof.js';
import { VerifyChecks } from './verify-checks.js';
import { parseVerifyOptions, type VerifyOptions } from './verify-options.js';

/** Records asked of a node per page. */
const NODE_PAGE = 10_000;

/** `GET /admin/audit/integrity`, as far as the verifier reads it. */
interface NodeIntegrityView {
  nodeId: string;
  chainEnabled: boolean;
  head: { seq: number; chainHash: string };
  keys: Array<{ seq: number; key: string }>;
  checkpoints: Array<{ seq: number; checkpoint: string }>;
  pruned: PrunedRange[];
}

interface Streams {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/** `auditlake verify`: 0 verified, 1 a break (or a history that cannot be read), 2 usage error. */
export async function verifyCommand(args: string[], env: NodeJS.ProcessEnv, streams: Streams): Promise<number> {
  let options: VerifyOptions;
  try {
    options = parseVerifyOptions(args, env);
  } catch (err) {
    if (isAuditError(err)) {
      streams.stderr.write(`auditlake verify: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  try {
    const report = await verifyHistory(options);
    streams.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : `${report.message}\n`);
    return report.ok ? 0 : 1;
  } catch (err) {
    if (isAuditError(err)) {
      streams.stderr.write(`auditlake verify: ${err.message}\n`);
      return err.code === AuditErrorCode.BAD_REQUEST ? 2 : 1;
    }
    throw err;
  }
}

/** Reads what the options name and verifies it as one history. */
export async function verifyHistory(options: VerifyOptions): Promise<VerifyReport> {
  const checks = new VerifyChecks(options.threads);
  try {
    return await verifyWith(options, checks);
  } finally {
    await checks.close();
  }
}

async function verifyWith(options: VerifyOptions, checks: VerifyChecks): Promise<VerifyReport> {
  const pinnedKeys = await Promise.all(options.publicKeyFiles.map(readPinnedKey));
  const tier = options.tier === undefined ? undefined : await readTierProof(options.tier, checks);
  const client = options.node === undefined ? undefined : new NodeClient({ url: options.node.url, token: options.node.token });
  const view = client === undefined ? undefined : await readView(client);
  const checkpoints: FoundCheckpoint[] = [...(tier?.checkpoints ?? [])];
  const shownKeys: ShownKey[] = [...(tier?.keys ?? [])];
  if (view !== undefined && client !== undefined) {
    const where = `node ${view.nodeId} (${client.url})`;
    for (const { checkpoint } of view.checkpoints) checkpoints.push({ checkpoint: parseSignedCheckpoint(checkpoint), where });
    for (const { key } of view.keys) shownKeys.push({ text: key, where });
  }
  const verifierOptions: ChainVerifierOptions = { checkpoints, shownKeys, startSeq: options.fromSeq };
  if (pinnedKeys.length > 0) verifierOptions.pinnedKeys = pinnedKeys;
  if (view !== undefined && client !== undefined) {
    verifierOptions.pruned = view.pruned;
    if (view.head.seq > 0) verifierOptions.head = { seq: view.head.seq, chainHash: view.head.chainHash, where: `node ${view.nodeId}` };
  } else if (tier?.head !== undefined) {
    verifierOptions.head = { seq: tier.head.seq, chainHash: undefined, where: tier.head.where };
  }
  const verifier = new ChainVerifier(verifierOptions);
  await feed(verifier, tier?.batches ?? [], client === undefined ? undefined : nodeRecords(client, checks));
  return verifier.finish();
}

async function readPinnedKey(file: string): Promise<KeyObject> {
  let pem: string;
  try {
    pem = await readFile(file, 'utf8');
  } catch (err) {
    throw new AuditError(AuditErrorCode.BAD_REQUEST, `--public-key ${file}: ${(err as Error).message}`);
  }
  const { publicKey } = readPublicKeyPem(pem);
  if (publicKey === undefined) throw new AuditError(AuditErrorCode.BAD_REQUEST, `--public-key ${file} is not an Ed25519 public key in PEM (SPKI)`);
  return publicKey;
}

async function readView(client: NodeClient): Promise<NodeIntegrityView> {
  const response = await client.request('/admin/audit/integrity');
  if (!response.ok) throw new AuditError(AuditErrorCode.BAD_REQUEST, `${client.url}/admin/audit/integrity answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
  return (await response.json()) as NodeIntegrityView;
}

/**
 * The node's records in seq order, checked a page at a time: the next page is fetched while
 * the last one is being checked.
 */
async function* nodeRecords(client: NodeClient, checks: VerifyChecks): AsyncGenerator<CheckedRecord> {
  let afterSeq = 0;
  let checking: Promise<CheckedBatch> | undefined;
  for (;;) {
    const response = await client.request(`/admin/audit/integrity/records?afterSeq=${afterSeq}&limit=${NODE_PAGE}`);
    if (!response.ok) throw new AuditError(AuditErrorCode.BAD_REQUEST, `${client.url}/admin/audit/integrity/records answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
    const text = await response.text();
    if (text === '') break;
    afterSeq = lastSeqOf(text);
    const page = checks.check({ jsonLines: text });
    // Awaited below, after the next page is fetched; a failure meanwhile is not unhandled.
    page.catch(() => undefined);
    if (checking !== undefined) yield* recordsOf(await checking);
    checking = page;
  }
  if (checking !== undefined) yield* recordsOf(await checking);
}

/** The seq of a page's last record (where the next page starts). */
function lastSeqOf(text: string): number {
  let end = text.length;
  while (end > 0 && text[end - 1] === '\n') end--;
  const record = JSON.parse(text.slice(text.lastIndexOf('\n', end - 1) + 1, end)) as { seq: number };
  return record.seq;
}

function* recordsOf(batch: CheckedBatch): Generator<CheckedRecord> {
  const reader = new CheckedBatchReader(batch);
  for (let record = reader.next(); record !== undefined; record = reader.next()) yield record;
}

/** Feeds the tier's records and the node's, merged by seq (a record in both is fed twice, the tier's copy first: identical copies are fine). */
async function feed(verifier: ChainVerifier, tier: readonly CheckedBatch[], node: AsyncGenerator<CheckedRecord> | undefined): Promise<void> {
  const tiered = mergeCheckedBatches(tier);
  let next = tiered.next();
  if (node !== undefined) {
    for await (const record of node) {
      while (!next.done && next.value.seq <= record.seq) {
        verifier.addChecked(next.value);
        next = tiered.next();
      }
      verifier.addChecked(record);
    }
  }
  for (; !next.done; next = tiered.next()) verifier.addChecked(next.value);
}
