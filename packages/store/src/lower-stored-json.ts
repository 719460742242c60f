/**
 * An event's stored JSON lower-cased as a search lower-cases its values (each field alone,
 * model's compileFilter): `json.toLowerCase()` but for capital sigma, whose lower case depends
 * on its neighbours. Lower-cased whole, a Σ right after an escape ending in a letter (`\n`,
 * `\t`, `\u001f`, a lone surrogate's `\udabc`) takes the final form ς, since the escape's letter
 * reads as a word before it, where the value — a control character before the Σ — gives σ; a
 * search for it then missed the event while it was local and found its tiered copy (review).
 * The text between escapes is lower-cased piece by piece, so no escape is a letter to it (what
 * an escape stands for is neither a letter nor ignored between letters, as a piece's end is).
 */
export function lowerStoredJson(json: string): string {
  if (!json.includes('Σ')) return json.toLowerCase();
  let lowered = '';
  let at = 0;
  for (const escape of json.matchAll(JSON_ESCAPE)) {
    lowered += json.slice(at, escape.index).toLowerCase() + escape[0].toLowerCase();
    at = escape.index + escape[0].length;
  }
  return lowered + json.slice(at).toLowerCase();
}

/** A JSON string escape: `\uXXXX` or a backslash and one character. */
const JSON_ESCAPE = /\\(?:u[0-9a-fA-F]{4}|.)/g;
