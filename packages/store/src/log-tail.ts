/**
 * A group's entries as UTF-8 bytes, each followed by a newline, and where each one ends. The
 * newlines make a run of entries one slice in the NDJSON a pull answer is sent as, so the
 * answer goes out without copying the entries into a new buffer (byte-lines.ts).
 */
export interface EncodedGroup {
  bytes: Buffer;
  /** ends[i] is where entry i ends in `bytes`; its newline follows, the next entry after it. */
  ends: Uint32Array;
}

/** One written group and the seq of its first entry. */
interface Chunk extends EncodedGroup {
  firstSeq: number;
}

/**
 * The newest log entries as the bytes LevelDB holds for them, kept by the node that appends
 * them, so a leader answers its standbys' pulls without reading the entries back. Reading them
 * back cost a LevelDB get per entry per standby, and those gets charged LevelDB's seek counters
 * until it compacted files for them: the leader compacted several times as much as a standby.
 *
 * One buffer per written group (not one per entry), so the garbage collector sees a few large
 * objects. It holds a contiguous run of seqs that always ends at the log's last seq: anything
 * else that changes the log (a replicated apply, a truncation, an erasure) clears it, a prune
 * drops what it deletes and everything before, and a read
 * it cannot answer in full from the start goes to LevelDB.
 */
export class LogTail {
  #maxBytes: number;
  #chunks: Chunk[] = [];
  #bytes = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /**
   * Encodes a group's entries, to be appended once they are written. Done before the write is
   * awaited, so the entry strings die young: kept across the write's fsync they outlived a
   * young-generation collection or two and were copied into the old generation.
   */
  static encode(jsons: readonly string[]): EncodedGroup {
    const ends = new Uint32Array(jsons.length);
    let total = 0;
    jsons.forEach((json, i) => {
      total += Buffer.byteLength(json, 'utf8');
      ends[i] = total;
      total += 1;
    });
    // Not from Node's shared pool: a small group would be a slice of an 8 KiB slab and keep the
    // whole slab alive as long as the tail holds it (a tail of one-event groups held several
    // times its counted bytes).
    const bytes = Buffer.allocUnsafeSlow(total);
    jsons.forEach((json, i) => {
      bytes.write(json, entryStart(ends, i), 'utf8');
      bytes[ends[i] as number] = NEWLINE;
    });
    return { bytes, ends };
  }

  /** Bytes it holds now: its entries', and GROUP_OVERHEAD_BYTES for each group. */
  get bytes(): number {
    return this.#bytes;
  }

  /** True when it keeps anything at all (a limit above 0): else the writer need not encode. */
  get enabled(): boolean {
    return this.#maxBytes > 0;
  }

  /** The entries of seqs `firstSeq`, `firstSeq + 1`, … were just written, as `group`. */
  append(firstSeq: number, group: EncodedGroup): void {
    if (group.ends.length === 0 || !this.enabled) return;
    if (firstSeq !== this.#nextSeq()) this.clear();
    this.#chunks.push({ firstSeq, ...group });
    this.#bytes += costOf(group);
    while (this.#bytes > this.#maxBytes && this.#chunks.length > 1) this.#bytes -= costOf(this.#chunks.shift() as Chunk);
  }

  /**
   * The entries after `afterSeq`, at most `limit`, as views into the kept bytes; undefined
   * when the tail does not hold seq afterSeq + 1 (or is empty), so LevelDB must answer.
   * The tail ends at the log's end, so an empty array means there is nothing newer.
   */
  read(afterSeq: number, limit: number): Uint8Array[] | undefined {
    const first = this.#chunks[0];
    if (first === undefined || afterSeq + 1 < first.firstSeq) return undefined;
    const entries: Uint8Array[] = [];
    // From the chunk holding afterSeq + 1, found by bisection: a tail of one-event groups holds
    // hundreds of thousands of chunks, and a walk from the oldest took milliseconds a read.
    for (let at = this.#chunkAfter(afterSeq); at < this.#chunks.length; at++) {
      const chunk = this.#chunks[at] as Chunk;
      const count = chunk.ends.length;
      if (afterSeq + 1 >= chunk.firstSeq + count) continue;
      for (let i = Math.max(0, afterSeq + 1 - chunk.firstSeq); i < count && entries.length < limit; i++) {
        entries.push(chunk.bytes.subarray(entryStart(chunk.ends, i), chunk.ends[i]));
      }
      if (entries.length >= limit) break;
    }
    return entries;
  }

  /** Keeps at most `maxBytes` from now on (0: nothing, and writers stop encoding): the newest groups stay. */
  resize(maxBytes: number): void {
    this.#maxBytes = maxBytes;
    if (maxBytes <= 0) this.clear();
    while (this.#bytes > this.#maxBytes && this.#chunks.length > 0) this.#bytes -= costOf(this.#chunks.shift() as Chunk);
  }

  clear(): void {
    this.#chunks = [];
    this.#bytes = 0;
  }

  /**
   * Forgets every entry up to `seq` (a prune deleted some of them), and with them the rest of
   * a group that holds `seq`: what stays is still a contiguous run ending at the log's end.
   */
  dropThrough(seq: number): void {
    const keep = this.#chunkAfter(seq);
    const chunk = this.#chunks[keep];
    const from = chunk !== undefined && chunk.firstSeq <= seq ? keep + 1 : keep;
    for (const dropped of this.#chunks.splice(0, from)) this.#bytes -= costOf(dropped);
  }

  /** The index of the first chunk whose entries reach past `seq` (the chunks' length when none does). */
  #chunkAfter(seq: number): number {
    let low = 0;
    let high = this.#chunks.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const chunk = this.#chunks[mid] as Chunk;
      if (chunk.firstSeq + chunk.ends.length - 1 <= seq) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  #nextSeq(): number | undefined {
    const last = this.#chunks[this.#chunks.length - 1];
    return last === undefined ? undefined : last.firstSeq + last.ends.length;
  }
}

const NEWLINE = 0x0a;

/**
 * What a group costs besides its entries' bytes: its ArrayBuffer and backing store, the Buffer
 * and Uint32Array views, the chunk object. Measured at 483 bytes (JS heap and ArrayBuffers,
 * Node 20): a tail of one-event groups of 300-byte entries held 2.6 times the bytes it counted
 * before this was counted too.
 */
const GROUP_OVERHEAD_BYTES = 512;

function costOf(group: EncodedGroup): number {
  return group.bytes.length + GROUP_OVERHEAD_BYTES;
}

/** Where entry i starts: after the previous entry's newline. */
function entryStart(ends: Uint32Array, i: number): number {
  return i === 0 ? 0 : (ends[i - 1] as number) + 1;
}
