import { checkpointHash, type SignedCheckpoint } from './checkpoint.js';

/** Where a checkpoint was found: a checkpoint record of the history, or a copy outside it. */
export interface FoundAt {
  /** For messages; a checkpoint record's is made from its seq when asked for. */
  where?: string;
  /** The seq of the checkpoint record holding it, when known. */
  recordSeq?: number;
  /** Found as a record of the history (not an object, a summary or a node's listing). */
  inStream: boolean;
}

/** Bytes per entry: the checkpoint's hash, chain hash, previous checkpoint's hash, signature. */
const HASH_AT = 0;
const CHAIN_AT = 32;
const PREVIOUS_AT = 64;
const SIGNATURE_AT = 96;
const ENTRY_BYTES = 160;
const SIGNATURE_BYTES = 64;

const IN_STREAM = 1;
const HAS_PREVIOUS = 2;
const MATCHED = 4;
const MISMATCHED = 8;

const CAPACITY_MIN = 64;

/**
 * Every checkpoint a verifier found, in the records and outside them (digest objects, packs,
 * snapshot summaries, a node's listing), held as fixed-size columns rather than parsed objects.
 *
 * Why: a verify holds every checkpoint of the history until it has read the last record (their
 * own chain and the records removed are judged from all of them). At one a minute a tier gains
 * ~525,000 a year, at 10,000 events/s (one per 60,000 records) over 5 million; as parsed objects,
 * each found twice (its record and its digest object), with the pack texts their strings were
 * cut from, that was ~1.3 KB a checkpoint — over 6 GB for such a year, past the heap a verify
 * gets. Here one is ~0.25 KB: hashes and the signature as bytes, the numbers in typed arrays,
 * chain id, key id and node id as indexes into the few distinct texts. An entry whose fields
 * do not come back exactly from that form (a signature that is not canonical base64 of 64
 * bytes, hex in upper case: what a forger may write) keeps its object, so the verdict never
 * depends on the form.
 */
export class FoundCheckpoints {
  #count = 0;
  #seq = new Float64Array(CAPACITY_MIN);
  /** NaN where the source did not name the record's seq. */
  #recordSeq = new Float64Array(CAPACITY_MIN);
  #timeMs = new Float64Array(CAPACITY_MIN);
  #term = new Float64Array(CAPACITY_MIN);
  #bytes = new Uint8Array(CAPACITY_MIN * ENTRY_BYTES);
  #flags = new Uint8Array(CAPACITY_MIN);
  /** Indexes into #texts: chain id, key id, node id. */
  #chainId = new Uint32Array(CAPACITY_MIN);
  #keyId = new Uint32Array(CAPACITY_MIN);
  #nodeId = new Uint32Array(CAPACITY_MIN);
  readonly #texts: string[] = [];
  readonly #textIndex = new Map<string, number>();
  readonly #where: Array<string | undefined> = [];
  /** Entries whose fields the columns cannot give back exactly. */
  readonly #kept = new Map<number, SignedCheckpoint>();
  /** The covered record's chain hash, for entries that did not match it. */
  readonly #covered = new Map<number, string | undefined>();

  get size(): number {
    return this.#count;
  }

  /** Adds a checkpoint as found (copies of one are added each time: see {@link sameAs}); returns its entry. */
  add(checkpoint: SignedCheckpoint, at: FoundAt): number {
    const i = this.#count;
    if (i === this.#seq.length) this.#grow();
    this.#count++;
    this.#seq[i] = checkpoint.seq;
    this.#recordSeq[i] = at.recordSeq ?? Number.NaN;
    this.#timeMs[i] = checkpoint.timeMs;
    this.#term[i] = checkpoint.term;
    this.#chainId[i] = this.#textId(checkpoint.chainId);
    this.#keyId[i] = this.#textId(checkpoint.keyId);
    this.#nodeId[i] = this.#textId(checkpoint.nodeId);
    const base = i * ENTRY_BYTES;
    const bytes = this.#bytes;
    bytes.set(hexBytes(checkpointHash(checkpoint)), base + HASH_AT);
    bytes.set(hexBytes(checkpoint.chainHash), base + CHAIN_AT);
    if (checkpoint.previousCheckpointHash !== '') bytes.set(hexBytes(checkpoint.previousCheckpointHash), base + PREVIOUS_AT);
    const signature = Buffer.from(checkpoint.signature, 'base64');
    if (signature.length === SIGNATURE_BYTES) bytes.set(signature, base + SIGNATURE_AT);
    this.#flags[i] = (at.inStream ? IN_STREAM : 0) | (checkpoint.previousCheckpointHash !== '' ? HAS_PREVIOUS : 0);
    this.#where[i] = at.inStream ? undefined : at.where;
    if (!sameCheckpoint(this.checkpoint(i), checkpoint)) this.#kept.set(i, checkpoint);
    return i;
  }

  /** The checkpoint of entry `i`, as found. */
  checkpoint(i: number): SignedCheckpoint {
    const kept = this.#kept.get(i);
    if (kept !== undefined) return kept;
    const base = i * ENTRY_BYTES;
    return {
      v: 1,
      chainId: this.#texts[this.#chainId[i] as number] as string,
      seq: this.#seq[i] as number,
      chainHash: this.#chainHash(i),
      timeMs: this.#timeMs[i] as number,
      term: this.#term[i] as number,
      keyId: this.#texts[this.#keyId[i] as number] as string,
      nodeId: this.#texts[this.#nodeId[i] as number] as string,
      previousCheckpointHash: ((this.#flags[i] as number) & HAS_PREVIOUS) === 0 ? '' : this.#hex(base + PREVIOUS_AT, 32),
      signature: Buffer.from(this.#bytes.buffer, this.#bytes.byteOffset + base + SIGNATURE_AT, SIGNATURE_BYTES).toString('base64'),
    };
  }

  seq(i: number): number {
    return this.#seq[i] as number;
  }

  recordSeq(i: number): number | undefined {
    const seq = this.#recordSeq[i] as number;
    return Number.isNaN(seq) ? undefined : seq;
  }

  inStream(i: number): boolean {
    return ((this.#flags[i] as number) & IN_STREAM) !== 0;
  }

  /** Where entry `i` was found, in words. */
  where(i: number): string {
    return this.#where[i] ?? `the checkpoint record at seq ${this.recordSeq(i)}`;
  }

  /** checkpointHash of entry `i`, lower-case hex (what the next checkpoint links to). */
  hash(i: number): string {
    return this.#hex(i * ENTRY_BYTES + HASH_AT, 32);
  }

  /** Whether entries `i` and `j` are one checkpoint (the same hash). */
  sameAs(i: number, j: number): boolean {
    return this.compareHashes(i, j) === 0;
  }

  /** Orders entries by their hashes' bytes. */
  compareHashes(i: number, j: number): number {
    const bytes = this.#bytes;
    const a = i * ENTRY_BYTES + HASH_AT;
    const b = j * ENTRY_BYTES + HASH_AT;
    for (let k = 0; k < 32; k++) {
      const d = (bytes[a + k] as number) - (bytes[b + k] as number);
      if (d !== 0) return d;
    }
    return 0;
  }

  /**
   * Entry `i`, found outside the records, is also the checkpoint record at `recordSeq`: one entry
   * stands for both (a checkpoint is nearly always found as its record and as its digest object),
   * with the record's place and words.
   */
  foundAsRecord(i: number, recordSeq: number): void {
    this.#flags[i] = (this.#flags[i] as number) | IN_STREAM;
    this.#recordSeq[i] = recordSeq;
    this.#where[i] = undefined;
  }

  /** Whether entry `i`'s hash is `hash` (lower-case hex). */
  hasHash(i: number, hash: string): boolean {
    return this.hash(i) === hash;
  }

  /** Notes entry `i` compared with the chained record it covers, whose chain hash is `chainHash`. */
  match(i: number, chainHash: string | undefined): void {
    const matches = chainHash === this.#chainHash(i);
    this.#flags[i] = (this.#flags[i] as number) | MATCHED | (matches ? 0 : MISMATCHED);
    if (!matches) this.#covered.set(i, chainHash);
  }

  matched(i: number): boolean {
    return ((this.#flags[i] as number) & MATCHED) !== 0;
  }

  /** When entry `i` was compared and differed: the covered record's chain hash. */
  mismatch(i: number): { chainHash: string | undefined } | undefined {
    return ((this.#flags[i] as number) & MISMATCHED) === 0 ? undefined : { chainHash: this.#covered.get(i) };
  }

  /** Entry `i`'s chain hash, without building the whole checkpoint. */
  #chainHash(i: number): string {
    return this.#kept.get(i)?.chainHash ?? this.#hex(i * ENTRY_BYTES + CHAIN_AT, 32);
  }

  #textId(text: string): number {
    let id = this.#textIndex.get(text);
    if (id === undefined) {
      id = this.#texts.length;
      this.#texts.push(text);
      this.#textIndex.set(text, id);
    }
    return id;
  }

  #hex(at: number, length: number): string {
    return Buffer.from(this.#bytes.buffer, this.#bytes.byteOffset + at, length).toString('hex');
  }

  #grow(): void {
    const capacity = this.#seq.length * 2;
    const grown = <A extends Float64Array | Uint32Array | Uint8Array>(from: A, make: (n: number) => A, width = 1): A => {
      const to = make(capacity * width);
      to.set(from);
      return to;
    };
    this.#seq = grown(this.#seq, (n) => new Float64Array(n));
    this.#recordSeq = grown(this.#recordSeq, (n) => new Float64Array(n));
    this.#timeMs = grown(this.#timeMs, (n) => new Float64Array(n));
    this.#term = grown(this.#term, (n) => new Float64Array(n));
    this.#bytes = grown(this.#bytes, (n) => new Uint8Array(n), ENTRY_BYTES);
    this.#flags = grown(this.#flags, (n) => new Uint8Array(n));
    this.#chainId = grown(this.#chainId, (n) => new Uint32Array(n));
    this.#keyId = grown(this.#keyId, (n) => new Uint32Array(n));
    this.#nodeId = grown(this.#nodeId, (n) => new Uint32Array(n));
  }
}

/** 32 bytes of a 64-hex text; anything else gives bytes that will not give it back (the entry keeps its object). */
function hexBytes(hex: string): Uint8Array {
  return Buffer.from(hex, 'hex').subarray(0, 32);
}

function sameCheckpoint(a: SignedCheckpoint, b: SignedCheckpoint): boolean {
  return (
    a.v === b.v &&
    a.chainId === b.chainId &&
    a.seq === b.seq &&
    a.chainHash === b.chainHash &&
    a.timeMs === b.timeMs &&
    a.term === b.term &&
    a.keyId === b.keyId &&
    a.nodeId === b.nodeId &&
    a.previousCheckpointHash === b.previousCheckpointHash &&
    a.signature === b.signature
  );
}
