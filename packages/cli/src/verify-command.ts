import { readFile } from 'node:fs/promises';
import type { KeyObject } from 'node:crypto';
import {
  ChainVerifier,
  CheckedBatchReader,
  feedMergedStreams,
  IdenticalCopyWatch,
  MergeHeldTooMuch,
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
import { segmentUrlKey } from '@auditlake/lake';
import { AuditError, AuditErrorCode, isAuditError } from '@auditlake/model';
import { NodeClient } from './node-client.js';
import { readTierProof, TierFileGone, TierSeqBoundsUntrue, type TierBoundsUse, type TierProof, type TierProofStart } from './tier-proof.js';
import { TierHeldSeqs, type SeqSpan } from './tier-held-seqs.js';
import { VerifyChecks } from './verify-checks.js';
import { parseVerifyOptions, type TierLocationOption, type VerifyOptions } from './verify-options.js';
import { VerifyProgress } from './verify-progress.js';

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
  /** Seqs the node's sweeps committed to each location; absent from a node of a version before them. */
  tierSegments?: Array<{ url: string; fromSeq: number; toSeq: number }>;
  /** How far the segments dropped past the newest 1,000 reached; null or absent while none was. */
  tierSegmentsCutThrough?: number | null;
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
  const progress = new VerifyProgress({ out: streams.stderr });
  try {
    const report = await verifyHistory(options, undefined, progress);
    progress.finish();
    streams.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : `${report.message}\n`);
    return report.ok ? 0 : 1;
  } catch (err) {
    progress.finish();
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

/**
 * Reads what the options name and verifies it as one history; on `checks` when given (the
 * caller closes them), else on `options.threads` worker threads; told to `progress` as it goes.
 */
export async function verifyHistory(options: VerifyOptions, checks?: VerifyChecks, progress?: VerifyProgress): Promise<VerifyReport> {
  if (checks !== undefined) return verifyAgainIfTierChanged(options, checks, progress);
  const own = new VerifyChecks(options.threads);
  try {
    return await verifyAgainIfTierChanged(options, own, progress);
  } finally {
    await own.close();
  }
}

async function verifyAgainIfTierChanged(options: VerifyOptions, checks: VerifyChecks, progress: VerifyProgress | undefined): Promise<VerifyReport> {
  let bounds: TierBoundsUse = 'declared';
  for (let attempt = 1; ; ) {
    try {
      return await verifyWith(options, checks, bounds, progress);
    } catch (err) {
      if ((err instanceof TierSeqBoundsUntrue || err instanceof MergeHeldTooMuch) && bounds === 'declared') {
        // The order the tier's records were read in rested on a bound the file does not keep, or
        // on bounds so loose the read held the tier (MergeHeldTooMuch): what was read is void, and
        // the tier is read again in the order the files themselves show.
        bounds = 'ignored';
        progress?.note(`verify: ${err.message}; reading the tier again in the order its files show (two passes)`);
        progress?.restart();
        continue;
      }
      if (!(err instanceof TierFileGone)) throw err;
      if (attempt >= TIER_CHANGED_ATTEMPTS) {
        throw new AuditError(
          AuditErrorCode.INTEGRITY_MISMATCH,
          `tier file ${err.key} is listed by the tier's commits but was gone from the bucket each of the ${attempt} times verify read the tier: its records are missing (or the tier is rewritten faster than verify reads it)`,
          { cause: err },
        );
      }
      attempt++;
      progress?.note(`verify: tier file ${err.key} was gone when fetched (the tier changed); reading it again from a new listing`);
      progress?.restart();
    }
  }
}

/**
 * One read of what the options name, verified as one history: each tier location's records in
 * seq order (each file fetched and checked once, in the order its commit's seq bounds give:
 * TierProof.records), and the node's log page by page, merged by seq as streams and folded.
 */
async function verifyWith(options: VerifyOptions, checks: VerifyChecks, bounds: TierBoundsUse, progress: VerifyProgress | undefined): Promise<VerifyReport> {
  const pinnedKeys = await Promise.all(options.publicKeyFiles.map(readPinnedKey));
  const proofs: TierProof[] = [];
  const started: Array<AsyncGenerator<CheckedRecord[]>> = [];
  try {
    const client = options.node === undefined ? undefined : new NodeClient({ url: options.node.url, token: options.node.token });
    // What the node says it tiered, asked before the tiers are read: every seq it names then was
    // committed before the read began, so the tiers must hold it, whatever their head as read
    // (an attacker controls that head: the newest commit deleted, its seqs were excused).
    const before = client === undefined || options.tiers.length === 0 ? undefined : await readView(client);
    for (const location of options.tiers) proofs.push(await readTierProof(location, checks, bounds, options.declaredOrderHeldMax));
    const view = client === undefined ? undefined : await readView(client);
    // Each location's records, then the node's: of copies of one seq, the tier's come first.
    const streams: Array<AsyncIterable<CheckedRecord[]>> = [];
    let firstSeq: number | undefined;
    for (const proof of proofs) {
      const records = proof.records();
      started.push(records);
      if (client === undefined) {
        streams.push(records);
        continue;
      }
      // With the node, which of its retention ranges excuse a record depends on where the
      // tiers begin (prunedOutsideTier): each location's least seq, its first record.
      const ahead = await readAhead(records);
      streams.push(ahead.records);
      if (ahead.first !== undefined && (firstSeq === undefined || ahead.first < firstSeq)) firstSeq = ahead.first;
    }
    const start = proofs.length === 0 ? undefined : oneProof(proofs);
    for (const note of start?.notes ?? []) progress?.note(note);
    const tier = start === undefined ? undefined : { ...start, covered: tierCoverage(proofs, options.tiers, { firstSeq, headSeq: start.head?.seq }, view, before) };
    const unmatched = unmatchedSegments(options.tiers, view);
    if (unmatched !== undefined) progress?.note(`verify: the node lists the seqs it tiered to ${unmatched}, none of them a location read here (compare the spelling of --path/--table): what it deleted is judged by the tiers' rows alone`);
    const [alone] = options.tiers;
    // A tier read alone is one copy of the history: a record it holds twice is a duplicated row
    // (ChainVerifierOptions.oneCopy). Read together, identical copies are allowed across
    // locations (and the node's log), not within one: a location that holds a row twice makes
    // an engine reading it count it twice, named as soon as seen, before the verifier reaches
    // that seq: first among its breaks there.
    const oneCopy = alone !== undefined && options.tiers.length === 1 && client === undefined ? `the tier at ${alone.location}` : undefined;
    const verifierOptions = verifierOptionsOf(options, pinnedKeys, tier, view, client);
    const verifier = new ChainVerifier({ ...verifierOptions, ...(oneCopy === undefined ? {} : { oneCopy }) });
    // The verifier holds the checkpoints in a compact form of its own: the parsed ones (and the
    // pack texts their strings were cut from, ~1 KB a checkpoint) go now, not after a read that
    // may take hours.
    for (const holder of [...proofs, ...(tier === undefined ? [] : [tier])]) holder.checkpoints.length = 0;
    progress?.expectHead(Math.max(tier?.head?.seq ?? 0, view?.head.seq ?? 0) || undefined);
    const watches = oneCopy !== undefined ? [] : proofs.map(() => new IdenticalCopyWatch());
    if (client !== undefined) {
      // Retention goes on while a long verify reads: records it deletes ahead of the cursor are
      // gaps the first view did not declare. At such a gap the view is read again and its
      // deleted ranges replace the verifier's (they only grow): before, the records looked
      // missing (review: an import of old history, deleted by a retention pass mid-verify).
      // The array prunedOutsideTier made (verifierOptionsOf): the verifier reads it at each gap.
      const pruned = verifierOptions.pruned as PrunedRange[] | undefined;
      let declared = view?.pruned ?? [];
      const gaps =
        pruned === undefined
          ? undefined
          : {
              headSeq: view?.head.seq,
              declared: (fromSeq: number, toSeq: number) => spanCovered(declared, fromSeq, toSeq),
              refresh: async () => {
                declared = (await readView(client)).pruned;
                pruned.splice(0, pruned.length, ...prunedOutsideTier(declared, tier?.covered ?? []));
              },
            };
      streams.push(nodeRecords(client, checks, gaps));
    }
    // With the node, the seqs it lists as committed to the tiers read must come from them.
    const held = client === undefined || tier === undefined ? undefined : new TierHeldSeqs(tier.covered);
    await feedMergedStreams(streams, (record, stream) => {
      if (stream < proofs.length) held?.see(record.seq);
      const copy = watches[stream]?.see(record);
      if (copy !== undefined) verifier.duplicatedIn(`the tier at ${(options.tiers[stream] as TierLocationOption).location}`, copy.seq, copy.eventId);
      verifier.addChecked(record);
      progress?.record(record.seq);
    });
    for (const proof of proofs) {
      const { legacyRows, seen } = proof.rowsWithoutSeq();
      verifier.addRowsWithoutSeq(legacyRows, seen);
    }
    const where = options.tiers.map((location) => location.location).join(', ');
    for (const range of held?.finish() ?? []) verifier.missingFromTier(range.fromSeq, range.toSeq, where);
    return verifier.finish();
  } finally {
    // A stream read ahead but never merged (a failure before) stops its loads before the checks close.
    for (const records of started) await records.return(undefined).catch(() => undefined);
    for (const proof of proofs) await proof.close();
  }
}

/** A stream with its first chunk read: that chunk's first seq (the stream's least), and the whole stream to read from the start. */
async function readAhead(stream: AsyncIterator<CheckedRecord[]>): Promise<{ first: number | undefined; records: AsyncIterable<CheckedRecord[]> }> {
  const head = await stream.next();
  const chunk = head.done === true ? [] : head.value;
  async function* records(): AsyncGenerator<CheckedRecord[]> {
    if (head.done === true) return;
    yield chunk;
    for (let next = await stream.next(); next.done !== true; next = await stream.next()) yield next.value;
  }
  return { first: chunk[0]?.seq, records: records() };
}

/**
 * The tier locations as one: after the tier target changed, each holds a part of the history
 * (an erasure record only the location current when it was tiered, while the sweep rewrote the
 * earlier ones too), so their records are merged by seq and their proofs put together; the
 * history ends where the furthest one's commits say. Rows without a seq are added per location.
 */
function oneProof(proofs: readonly TierProof[]): TierProofStart {
  let head: TierProof['head'];
  for (const proof of proofs) {
    if (proof.head !== undefined && (head === undefined || proof.head.seq > head.seq)) head = proof.head;
  }
  return {
    files: proofs.reduce((sum, proof) => sum + proof.files, 0),
    checkpoints: proofs.flatMap((proof) => proof.checkpoints),
    keys: proofs.flatMap((proof) => proof.keys),
    head,
    notes: proofs.flatMap((proof) => proof.notes),
  };
}

/**
 * The seqs the tiers read must hold where the node deleted them. The node lists the seq ranges
 * its sweeps committed to each location (NodeIntegrityView.tierSegments). Those it listed before
 * the tiers were read (`before`) count whole; those listed after, up to that location's head as
 * read — a commit after the tier was read is not in what was read, and retention may have
 * deleted its seqs here since. Before the first range (history tiered by a version that kept
 * none, or a node that keeps none) the tiers must hold everything from their least seq on —
 * unless ranges were dropped past the newest 1,000 (tierSegmentsCutThrough): the node no longer
 * says what it tiered there, and what it deleted is excused. The ranges are what catch a tier's
 * first rows removed (judged by its rows alone, the tier then seemed to begin after them) and its
 * newest commit removed, and they leave excused the seqs retention deleted while tiering was off,
 * which no tier holds.
 */
function tierCoverage(proofs: readonly TierProof[], locations: readonly TierLocationOption[], read: { firstSeq: number | undefined; headSeq: number | undefined }, view: NodeIntegrityView | undefined, before: NodeIntegrityView | undefined): SeqSpan[] {
  const segments = view?.tierSegments ?? [];
  const covered: SeqSpan[] = [];
  const { firstSeq, headSeq } = read;
  const cut = (view?.tierSegmentsCutThrough ?? undefined) !== undefined;
  const beforeSegments = segments.length === 0 ? headSeq : Math.min(headSeq ?? 0, Math.min(...segments.map((segment) => segment.fromSeq)) - 1);
  if (!cut && firstSeq !== undefined && beforeSegments !== undefined && firstSeq <= beforeSegments) covered.push({ fromSeq: firstSeq, toSeq: beforeSegments });
  proofs.forEach((proof, i) => {
    const url = segmentUrlKey((locations[i] as TierLocationOption).location);
    for (const segment of segmentsAt(before, url)) covered.push({ fromSeq: segment.fromSeq, toSeq: segment.toSeq });
    const readTo = proof.head?.seq;
    if (readTo === undefined) return;
    for (const segment of segmentsAt(view, url)) {
      const toSeq = Math.min(segment.toSeq, readTo);
      if (segment.fromSeq <= toSeq) covered.push({ fromSeq: segment.fromSeq, toSeq });
    }
  });
  return covered;
}

/** The seq ranges `view` says were committed to the location at `url` (compared by segmentUrlKey). */
function segmentsAt(view: NodeIntegrityView | undefined, url: string): NonNullable<NodeIntegrityView['tierSegments']> {
  return (view?.tierSegments ?? []).filter((segment) => segmentUrlKey(segment.url) === url);
}

/** The locations the node lists seqs for, when none of them is a location read (a spelling that differs, or a location not given); else undefined. */
function unmatchedSegments(locations: readonly TierLocationOption[], view: NodeIntegrityView | undefined): string | undefined {
  const listed = [...new Set((view?.tierSegments ?? []).map((segment) => segmentUrlKey(segment.url)))];
  if (listed.length === 0 || locations.length === 0) return undefined;
  const read = new Set(locations.map((location) => segmentUrlKey(location.location)));
  return listed.some((url) => read.has(url)) ? undefined : listed.join(', ');
}

/**
 * The ranges a node declares deleted by its retention that excuse records absent from both the
 * node and the tiers read with it: only those outside what the tiers must hold (tierCoverage).
 * Retention deletes only what was tiered, so there the tier must hold them; excused there, a row
 * removed from a tier file (its commit's count edited to match) passed as "removed by retention"
 * once the node had deleted its own copy (review). Elsewhere are records deleted before tiering
 * began, tiered to a location not given, or tiered after the tier was read. A piece of a range
 * keeps its chain hash only where it ends where the range ends (the hash is the one at its end).
 */
function prunedOutsideTier(pruned: readonly PrunedRange[], covered: readonly SeqSpan[]): PrunedRange[] {
  const spans = [...covered].sort((a, b) => a.fromSeq - b.fromSeq);
  const outside: PrunedRange[] = [];
  for (const range of pruned) {
    let from = range.fromSeq;
    for (const span of spans) {
      if (span.toSeq < from) continue;
      if (span.fromSeq > range.toSeq) break;
      if (span.fromSeq > from) outside.push({ fromSeq: from, toSeq: span.fromSeq - 1 });
      from = Math.max(from, span.toSeq + 1);
      if (from > range.toSeq) break;
    }
    if (from > range.toSeq) continue;
    outside.push(from === range.fromSeq ? { ...range } : { fromSeq: from, toSeq: range.toSeq, ...(range.chainHash === undefined ? {} : { chainHash: range.chainHash }) });
  }
  return outside;
}

/** The verifier's options: what the command line pins, and what the tier and the node show. */
function verifierOptionsOf(options: VerifyOptions, pinnedKeys: KeyObject[], tier: (TierProofStart & { covered: SeqSpan[] }) | undefined, view: NodeIntegrityView | undefined, client: NodeClient | undefined): ChainVerifierOptions {
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
    verifierOptions.pruned = prunedOutsideTier(view.pruned, tier?.covered ?? []);
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

/**
 * A node's answer that is not 2xx: a 400 is this command's request refused (a usage error,
 * exit 2); anything else (a 404 from a wrong --url path, a 429 that went on) is the node's
 * side, exit 1 — not a usage error, as every such answer was before (review).
 */
function answeredNot(client: NodeClient, path: string, status: number, body: string): AuditError {
  return new AuditError(status === 400 ? AuditErrorCode.BAD_REQUEST : AuditErrorCode.UNREACHABLE, `${client.shown}${path} answered ${status}: ${body.slice(0, 200)}`);
}

async function readView(client: NodeClient): Promise<NodeIntegrityView> {
  const response = await client.request('/admin/audit/integrity');
  if (!response.ok) throw answeredNot(client, '/admin/audit/integrity', response.status, await response.text());
  return (await response.json()) as NodeIntegrityView;
}

/**
 * The node's records in seq order, a page at a time, checked: the next page is fetched while
 * the last one is being checked. Stopped early, it returns once no page is being checked.
 */
async function* nodeRecords(client: NodeClient, checks: VerifyChecks, gaps?: NodeGaps): AsyncGenerator<CheckedRecord[]> {
  let afterSeq = 0;
  let checking: Promise<CheckedBatch> | undefined;
  let lastSeq = 0;
  /** The page's records, once any gap among them (or before them) the node has not declared deleted had the view read again. */
  const page = async (batch: CheckedBatch): Promise<CheckedRecord[]> => {
    const records = recordsOf(batch);
    let undeclared = false;
    for (const record of records) {
      if (record.seq > lastSeq + 1 && gaps?.declared(lastSeq + 1, record.seq - 1) === false) undeclared = true;
      lastSeq = record.seq;
    }
    if (undeclared) await gaps?.refresh();
    return records;
  };
  try {
    for (;;) {
      const response = await client.request(`/admin/audit/integrity/records?afterSeq=${afterSeq}&limit=${NODE_PAGE}`);
      if (!response.ok) throw answeredNot(client, '/admin/audit/integrity/records', response.status, await response.text());
      const text = await response.text();
      if (text === '') break;
      afterSeq = lastSeqOf(text);
      const checked = checks.check({ jsonLines: text });
      // Awaited below, after the next page is fetched; a failure meanwhile is not unhandled.
      checked.catch(() => undefined);
      if (checking !== undefined) {
        const done = checking;
        checking = undefined;
        yield await page(await done);
      }
      checking = checked;
    }
    if (checking !== undefined) {
      const done = checking;
      checking = undefined;
      yield await page(await done);
    }
    // The log ended short of its head as first read: deleted at its end since (review: the
    // newest records, old history imported last, deleted mid-verify read as a truncated tail).
    const head = gaps?.headSeq;
    if (head !== undefined && lastSeq < head && gaps?.declared(lastSeq + 1, head) === false) await gaps.refresh();
  } finally {
    await checking?.catch(() => undefined);
  }
}

/** How the node's pages tell a gap the node declared deleted from one it did not, and read its view again. */
interface NodeGaps {
  /** Where the node's log ended when verify began: records deleted at its end leave a gap no later record shows. */
  headSeq: number | undefined;
  declared(fromSeq: number, toSeq: number): boolean;
  refresh(): Promise<void>;
}

/** Whether `ranges` (in any order, possibly adjacent) cover every seq from `fromSeq` to `toSeq`. */
function spanCovered(ranges: readonly SeqSpan[], fromSeq: number, toSeq: number): boolean {
  let next = fromSeq;
  for (const range of [...ranges].sort((a, b) => a.fromSeq - b.fromSeq)) {
    if (range.fromSeq > next) break;
    if (range.toSeq >= next) next = range.toSeq + 1;
    if (next > toSeq) return true;
  }
  return next > toSeq;
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
