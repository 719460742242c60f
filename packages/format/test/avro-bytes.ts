// Avro bytes written by hand, for tests that need files no writer makes (hostile counts, varints
// that overflow, records of another layout).

export const MAGIC = [0x4f, 0x62, 0x6a, 0x01];
export const SYNC = Array.from({ length: 16 }, (_, i) => i + 1);

/** An Avro long: zig-zag, then base-128 varint. */
export function long(value: number | bigint): number[] {
  let n = BigInt(value);
  n = n >= 0n ? n << 1n : (-n << 1n) - 1n;
  const out: number[] = [];
  do {
    let byte = Number(n & 0x7fn);
    n >>= 7n;
    if (n > 0n) byte |= 0x80;
    out.push(byte);
  } while (n > 0n);
  return out;
}

/** An Avro string: its UTF-8 length, then its bytes. */
export function text(value: string): number[] {
  const bytes = [...new TextEncoder().encode(value)];
  return [...long(bytes.length), ...bytes];
}

/** A container file with `schema` as its writer schema and one block of `count` records held in `data`. */
export function avroFile(schema: unknown, count: number | bigint, data: number[]): Uint8Array {
  const header = [...MAGIC, ...long(2), ...text('avro.schema'), ...text(JSON.stringify(schema)), ...text('avro.codec'), ...text('null'), 0, ...SYNC];
  return Uint8Array.from([...header, ...long(count), ...long(data.length), ...data, ...SYNC]);
}
