/** Reading single fields out of a stored event's JSON text without parsing all of it. */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** A string member's key as a stored event writes it after the member before it: `,"name":"`. */
export interface JsonStringKey {
  text: string;
  /** The same as UTF-8, for JSON given as bytes. */
  bytes: Buffer;
}

export function jsonStringKey(name: string): JsonStringKey {
  const text = `,"${name}":"`;
  return { text, bytes: Buffer.from(text) };
}

export const SOURCE_KEY = jsonStringKey('source');
export const SOURCE_ID_KEY = jsonStringKey('sourceId');

/**
 * A string member of a stored event's JSON (text or UTF-8 bytes), read without parsing the
 * event: `,"name":"` outside a string value can only be the key itself (inside a value every
 * `"` is escaped). Undefined when the event has no such member.
 */
export function stringFieldOfJson(json: string | Buffer, key: JsonStringKey): string | undefined {
  const text = typeof json === 'string';
  const at = text ? json.indexOf(key.text) : json.indexOf(key.bytes);
  if (at < 0) return undefined;
  const start = at + key.text.length;
  let end = start;
  let escaped = false;
  for (;;) {
    const c = text ? json.charCodeAt(end) : json[end];
    if (c === undefined || Number.isNaN(c)) return undefined;
    if (c === BACKSLASH) {
      escaped = true;
      end += 2;
    } else if (c === QUOTE) break;
    else end++;
  }
  const raw = text ? json.slice(start, end) : json.toString('utf8', start, end);
  return escaped ? (JSON.parse(`"${raw}"`) as string) : raw;
}
