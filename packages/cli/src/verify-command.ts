import { readFile } from 'node:fs/promises';
import type { KeyObject } from 'node:crypto';
import {
  ChainVerifier,
  CheckedBatchReader,
  feedMergedStreams,
  IdenticalCopyWatch,
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
import { readTierProof, TierFileGone, type TierProof, type TierProofStart } from './tier-proof.js';
import { VerifyChecks } from './verify-checks.js';
import { parseVerifyOptions, type TierLocationOption, type VerifyOptions } from './verify-options.js';

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

/**
 * Times verify reads a tier from a new listing when a file it listed was removed before it was
 * fetched (TierFileGone): a tier being written changes under a long verify, and a busy one
 * more than once. Past that the removal is reported (exit 1, naming the file).
 */
export const TIER_CHANGED_ATTEMPTS = 3;

/** Reads what the options name and verifies it as one history; on `checks` when given (the caller closes them), else on `options.threads` worker threads. */
export async function verifyHistory(options: VerifyOptions, checks?: VerifyChecks): Promise<VerifyReport> {
  if (checks !== undefined) return verifyAgainIfTierChanged(options, checks);
  const own = new VerifyChecks(options.threads);
  try {
    return await verifyAgainIfTierChanged(options, own);
  } finally {
    await own.close();
  }
}

async function verifyAgainIfTierChanged(options: VerifyOptions, checks: VerifyChecks): Promise<VerifyReport> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await verifyWith(options, checks);
    } catch (err) {
      if (!(err instanceof TierFileGone)) throw err;
      if (attempt >= TIER_CHANGED_ATTEMPTS) {
        throw new AuditError(
          AuditErrorCode.INTEGRITY_MISMATCH,
          `tier file ${err.key} is listed by the tier's commits but was gone from the bucket each of the ${attempt} times verify read the tier: its records are missing (or the tier is rewritten faster than verify reads it)`,
          { cause: err },
        );
      }
    }
  }
}

async function verifyWith(options: VerifyOptions, checks: VerifyChecks): Promise<VerifyReport> {
  const pinnedKeys = await Promise.all(options.publicKeyFiles.map(readPinnedKey));
  const [first] = options.tiers;
  if (first !== undefined && options.tiers.length === 1 && options.node === undefined) return verifyTierAlone(first, options, pinnedKeys, checks);
  const proofs: TierProof[] = [];
  try {
    for (const location of options.tiers) proofs.push(await readTierProof(location, checks));
    const tier = proofs.length === 0 ? undefined : oneProof(proofs);
    const client = options.node === undefined ? undefined : new NodeClient({ url: options.node.url, token: options.node.token });
    const view = client === undefined ? undefined : await readView(client);
    const verifier = new ChainVerifier(verifierOptionsOf(options, pinnedKeys, tier, view, client));
    // Read together, identical copies are allowed across locations (and the node's log), not
    // within one: a location that holds a row twice makes an engine reading it count it twice.
    // Named as soon as seen, before the verifier reaches that seq: first among its breaks there.
    const watches = proofs.map(() => new IdenticalCopyWatch());
    // Each location's records, then the node's: of copies of one seq, the tier's come first.
    const streams = proofs.map((proof) => proof.records());
    if (client !== undefined) streams.push(nodeRecords(client, checks));
    await feedMergedStreams(streams, (record, stream) => {
      const copy = watches[stream]?.see(record);
      if (copy !== undefined) verifier.duplicatedIn(`the tier at ${(options.tiers[stream] as TierLocationOption).location}`, copy.seq, copy.eventId);
      verifier.addChecked(record);
    });
    for (const proof of proofs) verifier.addRowsWithoutSeq(proof.legacyRows, proof.rowsWithoutSeqSeen);
    return verifier.finish();
  } finally {
    for (const proof of proofs) await proof.close();
  }
}

/**
 * The tier locations as one: after the tier target changed, each holds a part of the history
 * (an erasure record only the location current when it was tiered, while the sweep rewrote the
 * earlier ones too), so their records are merged by seq and their proofs put together; the
 * history ends where the furthest one's commits say. Rows without a seq are added per location.
 */
function oneProof(proofs: readonly TierProof[]): TierProofStart & Pick<TierProof, 'firstSeq'> {
  let head: TierProof['head'];
  let firstSeq: number | undefined;
  for (const proof of proofs) {
    if (proof.head !== undefined && (head === undefined || proof.head.seq > head.seq)) head = proof.head;
    if (proof.firstSeq !== undefined && (firstSeq === undefined || proof.firstSeq < firstSeq)) firstSeq = proof.firstSeq;
  }
  return {
    files: proofs.reduce((sum, proof) => sum + proof.files, 0),
    checkpoints: proofs.flatMap((proof) => proof.checkpoints),
    keys: proofs.flatMap((proof) => proof.keys),
    head,
    firstSeq,
  };
}

/**
 * The ranges a node declares deleted by its retention that excuse records absent from both the
 * node and the tiers read with it: only those outside what the tiers cover (from their least
 * seq to their head). Retention deletes only what was tiered, so inside that span the tier must
 * hold them; excused there, a row removed from a tier file (its commit's count edited to match)
 * passed as "removed by retention" once the node had deleted its own copy (review). Below the
 * tiers' first record are records deleted before tiering began or tiered to a location not
 * given; a range cut at that start keeps no chain hash (it was the hash at its old end).
 */
function prunedOutsideTier(pruned: readonly PrunedRange[], tier: { firstSeq?: number | undefined; head: { seq: number } | undefined } | undefined): PrunedRange[] {
  const from = tier?.firstSeq;
  const to = tier?.head?.seq;
  if (from === undefined || to === undefined || from > to) return [...pruned];
  const outside: PrunedRange[] = [];
  for (const range of pruned) {
    if (range.toSeq < from || range.fromSeq > to) {
      outside.push(range);
      continue;
    }
    if (range.fromSeq < from) outside.push({ fromSeq: range.fromSeq, toSeq: from - 1 });
    if (range.toSeq > to) outside.push({ fromSeq: to + 1, toSeq: range.toSeq, chainHash: range.chainHash });
  }
  return outside;
}

/**
 * A tier alone: its records are folded while its files are still being checked
 * ({@link readTierProof}'s feed), instead of after all of them. When the tier's listing turns
 * out not to allow that, they are folded again from the start as the tier gives them in seq
 * order ({@link TierProof.records}: its files checked again, a few at a time): the same records
 * in the same order either way.
 */
async function verifyTierAlone(location: TierLocationOption, options: VerifyOptions, pinnedKeys: KeyObject[], checks: VerifyChecks): Promise<VerifyReport> {
  // One copy of the history: a record it holds twice is a duplicated row (ChainVerifierOptions.oneCopy).
  const oneCopy = `the tier at ${location.location}`;
  let verifier: ChainVerifier | undefined;
  const tier = await readTierProof(location, checks, (start) => {
    const folding = new ChainVerifier({ ...verifierOptionsOf(options, pinnedKeys, start, undefined, undefined), oneCopy });
    verifier = folding;
    return (record) => folding.addChecked(record);
  });
  try {
    if (verifier !== undefined && tier.folded) {
      verifier.addRowsWithoutSeq(tier.legacyRows, tier.rowsWithoutSeqSeen);
      return verifier.finish();
    }
    // Dropped before the second pass: what it holds of the first is of no more use.
    verifier = undefined;
    const again = new ChainVerifier({ ...verifierOptionsOf(options, pinnedKeys, tier, undefined, undefined), oneCopy });
    await feedMergedStreams([tier.records()], (record) => again.addChecked(record));
    again.addRowsWithoutSeq(tier.legacyRows, tier.rowsWithoutSeqSeen);
    return again.finish();
  } finally {
    await tier.close();
  }
}

/** The verifier's options: what the command line pins, and what the tier and the node show. */
function verifierOptionsOf(options: VerifyOptions, pinnedKeys: KeyObject[], tier: (TierProofStart & { firstSeq?: number | undefined }) | undefined, view: NodeIntegrityView | undefined, client: NodeClient | undefined): ChainVerifierOptions {
  const checkpoints: FoundCheckpoint[] = [...(tier?.checkpoints ?? [])];
  const shownKeys: ShownKey[] = [...(tier?.keys ?? [])];
  if (view !== undefined && client !== undefined) {
    const where = `node ${view.nodeId} (${client.shown})`;
    for (const { seq, checkpoint } of view.checkpoints) checkpoints.push({ checkpoint: parseSignedCheckpoint(checkpoint), where, recordSeq: seq });
    for (const { key } of view.keys) shownKeys.push({ text: key, where });
  }
  const verifierOptions: ChainVerifierOptions = { checkpoints, shownKeys, startSeq: options.fromSeq };
  if (options.preChainHoles) verifierOptions.preChainHoles = true;
  if (pinnedKeys.length > 0) verifierOptions.pinnedKeys = pinnedKeys;
  if (view !== undefined && client !== undefined) {
    verifierOptions.pruned = prunedOutsideTier(view.pruned, tier);
    if (view.head.seq > 0) verifierOptions.head = { seq: view.head.seq, chainHash: view.head.chainHash, where: `node ${view.nodeId}` };
  } else if (tier?.head !== undefined) {
    verifierOptions.head = { seq: tier.head.seq, chainHash: undefined, where: tier.head.where };
  }
  return verifierOptions;
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
  if (!response.ok) throw new AuditError(AuditErrorCode.BAD_REQUEST, `${client.shown}/admin/audit/integrity answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
  return (await response.json()) as NodeIntegrityView;
}

/**
 * The node's records in seq order, a page at a time, checked: the next page is fetched while
 * the last one is being checked. Stopped early, it returns once no page is being checked.
 */
async function* nodeRecords(client: NodeClient, checks: VerifyChecks): AsyncGenerator<CheckedRecord[]> {
  let afterSeq = 0;
  let checking: Promise<CheckedBatch> | undefined;
  try {
    for (;;) {
      const response = await client.request(`/admin/audit/integrity/records?afterSeq=${afterSeq}&limit=${NODE_PAGE}`);
      if (!response.ok) throw new AuditError(AuditErrorCode.BAD_REQUEST, `${client.shown}/admin/audit/integrity/records answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
      const text = await response.text();
      if (text === '') break;
      afterSeq = lastSeqOf(text);
      const page = checks.check({ jsonLines: text });
      // Awaited below, after the next page is fetched; a failure meanwhile is not unhandled.
      page.catch(() => undefined);
      if (checking !== undefined) {
        const done = checking;
        checking = undefined;
        yield recordsOf(await done);
      }
      checking = page;
    }
    if (checking !== undefined) {
      const done = checking;
      checking = undefined;
      yield recordsOf(await done);
    }
  } finally {
    await checking?.catch(() => undefined);
  }
}

/** The seq of a page's last record (where the next page starts). */
function lastSeqOf(text: string): number {
  let end = text.length;
  while (end > 0 && text[end - 1] === '\n') end--;
  const record = JSON.parse(text.slice(text.lastIndexOf('\n', end - 1) + 1, end)) as { seq: number };
  return record.seq;
}

function recordsOf(batch: CheckedBatch): CheckedRecord[] {
  const records: CheckedRecord[] = [];
  const reader = new CheckedBatchReader(batch);
  for (let record = reader.next(); record !== undefined; record = reader.next()) records.push(record);
  return records;
}
