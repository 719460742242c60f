/**
 * The first member name an object of `json` (valid JSON) holds twice, decoded, or undefined.
 * JSON.parse keeps the last of two and says nothing, so `{"k":"bad","k":8}` was saved as 8 and
 * recorded as a change of k alone (review): a body two readers can read two ways is refused
 * instead. A scan of the text, for bodies JSON.parse has accepted: every `"` opens a string
 * whose escapes are skipped, and a string is a member name where an object expects one (after
 * `{` or a `,` inside an object).
 */
export function jsonDuplicateMember(json: string): string | undefined {
  // One entry per open container: the names seen for an object, null for an array.
  const open: Array<Set<string> | null> = [];
  let expectName = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 0x22) {
      let end = i + 1;
      while (end < json.length && json.charCodeAt(end) !== 0x22) end += json.charCodeAt(end) === 0x5c ? 2 : 1;
      if (expectName) {
        // Decoded: "a" and "\u0061" name one member.
        const name = JSON.parse(json.slice(i, end + 1)) as string;
        const names = open.at(-1);
        if (names?.has(name)) return name;
        names?.add(name);
        expectName = false;
      }
      i = end;
    } else if (c === 0x7b) {
      open.push(new Set());
      expectName = true;
    } else if (c === 0x5b) {
      open.push(null);
      expectName = false;
    } else if (c === 0x7d || c === 0x5d) {
      open.pop();
      expectName = false;
    } else if (c === 0x2c) {
      expectName = open.at(-1) instanceof Set;
    }
  }
  return undefined;
}
