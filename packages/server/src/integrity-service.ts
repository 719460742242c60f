import { randomUUID } from 'node:crypto';
import {
  checkpointEvent,
  checkpointHash,
  encodePublishedKey,
  keyRegistrationEvent,
  parseSignedCheckpoint,
  publishKey,
  signCheckpoint,
  type NodeKey,
  type SignedCheckpoint,
} from '@auditlake/integrity';
import { AuditError, AuditErrorCode, encodeEvent, isAuditError, type AuditEvent } from '@auditlake/model';
import { readTierSegments, readTierSegmentsCut, type TierSegment } from '@auditlake/lake';
import type { AuditStore, PrunedRange } from '@auditlake/store';
import type { Membership } from './membership.js';

/** How often the leader looks whether a checkpoint is due (cheap: two numbers compared). */
export const CHECKPOINT_POLL_MS = 250;

export interface IntegrityServiceOptions {
  store: AuditStore;
  membership: Membership;
  nodeId: string;
  key: NodeKey;
  now: () => number;
  /** A checkpoint after this many records since the last one… */
  checkpointEvents: number;
  /** …or this long after the last one, when records came since. */
  checkpointIntervalMs: number;
  /** Injected so a test decides when the leader looks (default: a CHECKPOINT_POLL_MS timer). */
  pollMs?: number;
  log: { warn(obj: object, msg: string): void };
}

/** What `GET /admin/audit/integrity` answers (docs/http-api.md, "Integrity"). */
export interface IntegrityView {
  nodeId: string;
  /** This node's signing key id. */
  keyId: string;
  chainEnabled: boolean;
  chainId: string | undefined;
  /** Where this node's log ends, and its chain hash there. */
  head: { seq: number; chainHash: string };
  /** Public keys registered in the log (published form), this node's own included once registered. */
  keys: Array<{ seq: number; key: string }>;
  /** The newest checkpoints (signed, published form), oldest first. */
  checkpoints: Array<{ seq: number; checkpoint: string }>;
  /** Seq ranges retention deleted here, with the chain hash at each range's end. */
  pruned: readonly PrunedRange[];
  /**
   * The seq ranges this log's sweeps committed to each tier location (by its URL), oldest first:
   * what a verifier reading this node with those locations may not take as excused by `pruned`.
   */
  tierSegments: TierSegment[];
  /** The greatest seq a segment dropped past the newest 1,000 reached; null while none was. */
  tierSegmentsCutThrough: number | null;
}

/** Checkpoints listed by `GET /admin/audit/integrity`. */
export const CHECKPOINTS_LISTED = 100;

/**
 * The leader's part of the record chain (docs/integrity.md): signs a checkpoint every
 * `checkpointEvents` records or `checkpointIntervalMs`, whichever comes first, registering this
 * node's public key in the log right before its first one, and records it in the log itself (so it is
 * replicated, tiered and chained like any record). A new leader continues the chain of
 * checkpoints it finds in its log, under its own key.
 */
export class IntegrityService {
  readonly #options: IntegrityServiceOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #lastCheckpoint: { seq: number; timeMs: number } | undefined;
  #unsubscribeCut: (() => void) | undefined;
  #closed = false;

  constructor(options: IntegrityServiceOptions) {
    this.#options = options;
  }

  start(): void {
    if (this.#closed || this.#timer !== undefined || !this.#options.store.chainEnabled) return;
    this.#timer = setInterval(() => void this.tick(), this.#options.pollMs ?? CHECKPOINT_POLL_MS);
    this.#timer.unref();
    // A cut log may have lost the checkpoint last signed: the next is due from the one it holds.
    this.#unsubscribeCut = this.#options.store.onLogCut(() => {
      this.#lastCheckpoint = undefined;
    });
  }

  /**
   * Does what is due now: registers the key, signs a checkpoint. Runs one at a time; a call
   * while one runs waits for it. Never throws (a failure is logged and retried next tick).
   */
  tick(): Promise<void> {
    this.#running ??= this.#tickOnce().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** Signs a checkpoint of the log as it is now, if records came since the last (tests, shutdown). */
  async checkpointNow(): Promise<SignedCheckpoint | undefined> {
    await this.#running;
    if (!this.#options.membership.isLeader() || !this.#options.store.chainEnabled) return undefined;
    await this.#ensureKeyRegistered();
    return this.#checkpoint();
  }

  /** Registers this node's key in the log now, unless it already is (a test sets the log's start). */
  async registerKey(): Promise<void> {
    await this.#running;
    if (this.#options.membership.isLeader() && this.#options.store.chainEnabled) await this.#ensureKeyRegistered();
  }

  async #tickOnce(): Promise<void> {
    const { store, membership } = this.#options;
    if (this.#closed || !membership.isLeader() || !store.chainEnabled) return;
    try {
      const last = this.#lastCheckpoint ?? (await this.#latestCheckpointPlace());
      this.#lastCheckpoint = last;
      const head = store.chainHead;
      const since = head.seq - last.seq;
      if (since <= 0) return;
      // Counted from the last checkpoint record, so that record alone never makes the next one due.
      // One timed ahead of this clock (signed before the clock stepped back, or by a leader
      // whose clock was ahead) is due at once: else none was signed by time until this clock
      // caught up, and a quiet log's tail went unanchored that long.
      const sinceMs = this.#options.now() - last.timeMs;
      if (since >= this.#options.checkpointEvents || sinceMs >= this.#options.checkpointIntervalMs || sinceMs < 0) {
        // The key is registered right before its first checkpoint: an idle node adds nothing to the log.
        await this.#ensureKeyRegistered();
        await this.#checkpoint();
      }
    } catch (err) {
      if (isAuditError(err, AuditErrorCode.NOT_LEADER) || isAuditError(err, AuditErrorCode.STORE_NOT_OPEN)) return;
      this.#options.log.warn({ err }, 'could not sign an integrity checkpoint (retried)');
    }
  }

  async #latestCheckpointPlace(): Promise<{ seq: number; timeMs: number }> {
    const [latest] = await this.#options.store.checkpoints(1);
    if (latest === undefined) return { seq: 0, timeMs: this.#options.now() };
    const signed = parseSignedCheckpoint(latest.checkpoint);
    // From the record that holds it: the checkpoint record's own seq is already covered.
    return { seq: latest.seq, timeMs: signed.timeMs };
  }

  async #ensureKeyRegistered(): Promise<void> {
    const { store, key, nodeId, now } = this.#options;
    const keys = await store.registeredKeys();
    if (keys.has(key.keyId)) return;
    await this.#record(keyRegistrationEvent(`integrity-key-${key.keyId}-${randomUUID()}`, publishKey(key, nodeId), now()));
  }

  async #checkpoint(): Promise<SignedCheckpoint | undefined> {
    const { store, key, nodeId, membership, now } = this.#options;
    // The head is read here and the record appended later: a cut of the log in between (a
    // leader adopting a tier's entries) would leave it covering a head the log no longer has.
    const cuts = store.cutCount;
    const head = store.chainHead;
    if (!head.started || head.seq === 0) return undefined;
    const [previous] = await store.checkpoints(1);
    const previousSigned = previous === undefined ? undefined : parseSignedCheckpoint(previous.checkpoint);
    if (previousSigned !== undefined && previousSigned.seq >= head.seq) return undefined;
    // This clock's time, also when before the previous checkpoint's (a clock stepped back, a
    // successor whose clock is slower): retention deletes checkpoint records in seq order
    // whatever their times (AuditStore), so the index of checkpoints stays one chain.
    const timeMs = now();
    const signed = signCheckpoint(
      {
        v: 1,
        // The chain's id is chosen by its first checkpoint and kept by every later one.
        chainId: previousSigned?.chainId ?? randomUUID(),
        seq: head.seq,
        chainHash: head.chainHash,
        timeMs,
        term: membership.term(),
        keyId: key.keyId,
        nodeId,
        previousCheckpointHash: previousSigned === undefined ? '' : checkpointHash(previousSigned),
      },
      key.privateKey,
    );
    const stored = await this.#record(checkpointEvent(`integrity-checkpoint-${head.seq}-${randomUUID()}`, signed), cuts);
    if (stored !== undefined) this.#lastCheckpoint = { seq: stored, timeMs };
    return signed;
  }

  /**
   * Appends one of auditlake's own integrity records to the log; its seq, or undefined. With
   * `cuts`, refused unless the log has not been cut since the caller read it (asked right
   * before the record's batch is written, in the store's writer, so no cut slips in between).
   */
  async #record(event: AuditEvent, cuts?: number): Promise<number | undefined> {
    const { store, membership } = this.#options;
    // Under the leader's sequencer: a cluster node orders only as the leader (a deposed one refuses).
    const sequencer = (): number => {
      if (cuts !== undefined && store.cutCount !== cuts) throw new AuditError(AuditErrorCode.INTEGRITY_MISMATCH, 'the log was cut while a checkpoint was being signed; it is signed again at the next tick');
      return membership.sequencer();
    };
    const result = await store.appendEncoded([encodeEvent(event)], { sequencer });
    return result.stored[0]?.seq;
  }

  /** What `GET /admin/audit/integrity` answers. */
  async view(): Promise<IntegrityView> {
    const { store, key, nodeId } = this.#options;
    const head = store.chainHead;
    const checkpoints = await store.checkpoints(CHECKPOINTS_LISTED);
    const latest = checkpoints.at(-1);
    const keys = [...(await store.registeredKeys()).values()].sort((a, b) => a.seq - b.seq);
    return {
      nodeId,
      keyId: key.keyId,
      chainEnabled: store.chainEnabled,
      chainId: latest === undefined ? undefined : parseSignedCheckpoint(latest.checkpoint).chainId,
      head: { seq: head.seq, chainHash: head.chainHash },
      keys,
      checkpoints,
      pruned: store.prunedRanges,
      tierSegments: await readTierSegments(store),
      tierSegmentsCutThrough: (await readTierSegmentsCut(store)) ?? null,
    };
  }

  /** This node's public key as published (also when not yet registered). */
  publishedKey(): string {
    return encodePublishedKey(publishKey(this.#options.key, this.#options.nodeId));
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#unsubscribeCut?.();
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }
}
