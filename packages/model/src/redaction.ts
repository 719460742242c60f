import { parseFailure, type ValueParser } from './config-values.js';

/**
 * Key names whose values are masked by default (`audit.redact.keys`). A key matches every key
 * name that contains it once both are lower-cased and stripped of everything but letters and
 * digits, so `secret` also covers `s3.secret-key`, `client_secret` and `dbSecret`. A short key
 * (SHORT_KEY_LENGTH_MAX letters and digits or fewer) matches only a name that has it as a word
 * (see keyWords): `sig` covers Azure SAS `sig` but not `signal` or `design`, `pwd` covers ODBC
 * `Pwd` and `db_pwd`. `signature` is not a default: it would also mask `signature_id = 5` and
 * `SignatureVersion`; the signatures of presigned URLs are covered by `amz-signature`,
 * `goog-signature` and `sig`.
 */
export const DEFAULT_REDACT_KEYS = [
  'password',
  'passwd',
  'pwd',
  'passphrase',
  'secret',
  'token',
  'credential',
  'access-key',
  'secret-key',
  'session-token',
  'api-key',
  'private-key',
  'authorization',
  'cookie',
  'amz-signature',
  'goog-signature',
  'sig',
] as const;

/** Keys this short (in letters and digits) match only a whole word of a key name: see keyWords. */
export const SHORT_KEY_LENGTH_MAX = 3;

/** What a masked value becomes. */
export const REDACTION_MASK = '***';

/** Most keys `audit.redact.keys` may list, and the longest one, in characters. */
export const REDACT_KEYS_COUNT_MAX = 64;
export const REDACT_KEY_LENGTH_MAX = 64;

const KEY_SPELLING = /^[A-Za-z0-9._-]+$/;

/** Lower-cased letters and digits only: the form key names are compared in. */
export function normalizeKeyName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/**
 * The words of a key name, lower-cased: runs of letters and digits, split where a lower-case
 * letter or digit meets an upper-case one (`dbPwd`, `PWDHash`): `X-Amz-Sig` → x, amz, sig.
 */
export function keyWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
}

/**
 * Parses `audit.redact.keys`: key names separated by commas ('' turns masking off). Each is
 * letters, digits, '.', '_' and '-', with at least one letter or digit; repeats are dropped.
 */
export const redactKeyList: ValueParser<string[]> = (value) => {
  const keys: string[] = [];
  if (value.trim() === '') return keys;
  for (const part of value.split(',')) {
    const key = part.trim();
    if (key === '') parseFailure('must be key names separated by commas, with no empty entry');
    if (!KEY_SPELLING.test(key) || normalizeKeyName(key) === '') parseFailure(`must list key names made of letters, digits, '.', '_' and '-' (got ${JSON.stringify(key)})`);
    if (key.length > REDACT_KEY_LENGTH_MAX) parseFailure(`must list key names of at most ${REDACT_KEY_LENGTH_MAX} characters (got one of ${key.length})`);
    if (!keys.some((k) => normalizeKeyName(k) === normalizeKeyName(key))) keys.push(key);
  }
  if (keys.length > REDACT_KEYS_COUNT_MAX) parseFailure(`must list at most ${REDACT_KEYS_COUNT_MAX} keys (got ${keys.length})`);
  return keys;
};

/** A text after masking, and how many values were masked in it. */
export interface Redaction {
  text: string;
  count: number;
}

/** Longest key name looked at, in characters: longer runs are not key names. */
const KEY_NAME_LENGTH_MAX = 256;

/**
 * A key followed by its separator, in the two shapes that carry a value:
 * - a quoted key (`"k"`, `'k'`, a backquoted name, or `\"k\"` inside a JSON-encoded string)
 *   followed by `:` or `=` (JSON members, `'k'='v'` SQL properties);
 * - a bare key (`k=v`, `a.b-c = v`, `k => v`), not preceded by a key character, or a bare key
 *   followed by whitespace and a SQL string literal, with no separator at all
 *   (`PASSWORD 'v'`, `SECRET_ACCESS_KEY 'v'`).
 * Any whitespace, line breaks included, may surround the separator (`'k' =\n 'v'`). Each
 * whitespace run is read at most once per site tried, so the scan stays linear.
 * Groups: 1 quote, 2 quoted key, 3 its separator, 4 bare key, 5 its separator (none for
 * `k 'v'`).
 */
const KEY_SITE = new RegExp(
  String.raw`(?:(\\?["'\x60])([^"'\x60\\\r\n]{1,${KEY_NAME_LENGTH_MAX}})\1\s*([:=])|(?<![\w.$-])([\w.$-]{1,${KEY_NAME_LENGTH_MAX}})(?:\s*(=>?)|\s+(?=')))\s*`,
  'g',
);

/**
 * The words parsers put before a quoted piece of the text they failed on: in
 * `Unexpected token 'o', "x" is not valid JSON` the quoted text is no token's value.
 */
const PARSER_MESSAGE = /\b(?:unexpected|unrecognized)\s+$/i;

/** Whether the key of a `k 'v'` site at `keyStart` is a word of a parser's error message. */
function isParserMessage(text: string, keyStart: number): boolean {
  return PARSER_MESSAGE.test(text.slice(Math.max(0, keyStart - 24), keyStart));
}

/** A property list where a key may precede its value without a separator: `OPTIONS (k 'v')`. */
const PROPERTY_LIST = /\b(?:WITH|OPTIONS|TBLPROPERTIES|SERDEPROPERTIES|PROPERTIES)[ \t\r\n]*\(/gi;

/** Where an unquoted value ends. */
const BARE_VALUE_END = /[\s,;&)}\]"'<>\\]/;

/**
 * Masks the values of configured keys in free text: `key=value`, `'key'='value'`,
 * `"key": "value"` (also inside a JSON-encoded string, as `\"key\":\"value\"`), and the
 * properties of SQL `WITH (…)`, `OPTIONS (…)` and `TBLPROPERTIES (…)` lists, with or without
 * `=`. Values become `***` (quotes kept; an unquoted JSON value becomes `"***"`, so JSON stays
 * JSON). An object or array value is not masked whole: its own members are looked at. A value
 * already `***` is left alone and not counted, so masking twice changes nothing.
 * Text in which no configured key is the name of a value comes back as the same string.
 */
export class Redactor {
  readonly keys: readonly string[];
  readonly #normalized: string[];
  /** Normalized keys matched by containment, and short ones matched as a whole word. */
  readonly #contained: string[];
  readonly #words: string[];
  /** Necessary for any match: some key's characters in order, with only non-alphanumerics between. */
  readonly #probe: RegExp | undefined;

  /** Whether passwords given without the word (a URL's `user:password@`, `IDENTIFIED BY '…'`) are masked. */
  readonly #passwordSyntax: boolean;

  constructor(keys: readonly string[]) {
    this.keys = [...keys];
    this.#normalized = keys.map(normalizeKeyName).filter((k) => k !== '');
    this.#contained = this.#normalized.filter((k) => k.length > SHORT_KEY_LENGTH_MAX);
    this.#words = this.#normalized.filter((k) => k.length <= SHORT_KEY_LENGTH_MAX);
    // One pass over the text rejects almost every event; only texts that pass are scanned.
    this.#probe = this.#normalized.length === 0 ? undefined : new RegExp(this.#normalized.map((k) => [...k].join('[^a-z0-9]*')).join('|'), 'i');
    this.#passwordSyntax = this.isSensitiveKey('password');
  }

  /** Whether a key name names a masked value. */
  isSensitiveKey(name: string): boolean {
    const normalized = normalizeKeyName(name);
    if (this.#contained.some((key) => normalized.includes(key))) return true;
    if (this.#words.length === 0 || !this.#words.some((key) => normalized.includes(key))) return false;
    const words = keyWords(name);
    return this.#words.some((key) => words.includes(key));
  }

  redact(text: string): Redaction {
    let result: Redaction = { text, count: 0 };
    if (text === '') return result;
    if (this.#probe?.test(text) === true) result = this.#maskKeyed(text);
    if (!this.#passwordSyntax) return result;
    // A password named by the syntax rather than by a key: the value of the key `password`.
    for (const pass of [maskIdentifiedBy, maskUrlPasswords]) {
      const masked = pass(result.text);
      if (masked.count > 0) result = { text: masked.text, count: result.count + masked.count };
    }
    return result;
  }

  /** Values named by a configured key. */
  #maskKeyed(text: string): Redaction {
    const listed = this.#maskPropertyLists(text);
    const sited = this.#maskKeySites(listed.text);
    return { text: sited.text, count: listed.count + sited.count };
  }

  /** `key=value`, `'key'='value'`, `"key": value` anywhere in the text. */
  #maskKeySites(text: string): Redaction {
    const out = new Splicer(text);
    const site = new RegExp(KEY_SITE.source, 'g');
    let match: RegExpExecArray | null;
    while ((match = site.exec(text)) !== null) {
      if (out.count >= MASKED_VALUES_PER_TEXT_MAX) {
        // Past so many secrets in one field, the rest of it is masked whole: value by value a
        // crafted field costs ~1 µs a value (lists of 60 values under `password`, again and
        // again, held the ingest parse thread ~2.5 s per 8 MiB body: review). Masking more
        // than asked never shows a value.
        out.mask({ quote: '', content: text.slice(match.index), contentStart: match.index, contentEnd: text.length, end: text.length }, REDACTION_MASK);
        break;
      }
      const quote = match[1];
      const key = match[2] ?? match[4] ?? '';
      const valueStart = match.index + match[0].length;
      if (quote !== undefined) {
        // What looks like a quoted key may be the text between two quoted strings
        // (`'a')  pwd=Q ':`). When a sensitive bare site is inside it, it is no key: mask
        // those values and go on scanning after them.
        const keyStart = match.index + quote.length;
        const inner = this.#bareSiteValues(text, keyStart, keyStart + key.length);
        if (inner.length > 0) {
          for (const value of inner) out.mask(value, REDACTION_MASK);
          site.lastIndex = (inner.at(-1) as ValueSpan).end;
          continue;
        }
      }
      const unseparated = match[4] !== undefined && match[5] === undefined;
      if (!this.isSensitiveKey(key) || (unseparated && isParserMessage(text, match.index))) {
        // Values are scanned too: `uri=/x?token=abc` holds a site inside a value.
        site.lastIndex = Math.max(valueStart, match.index + 1);
        continue;
      }
      // An unquoted value after a quoted key and a colon is a JSON member: mask it as a string.
      const unquotedMask = quote !== undefined && match[3] === ':' ? `${quote}${REDACTION_MASK}${quote}` : REDACTION_MASK;
      const opener = text[valueStart];
      FUNCTION_CALL.lastIndex = valueStart;
      const call = FUNCTION_CALL.exec(text);
      if (opener === '[' || opener === '(' || call !== null) {
        // A list under a sensitive key (or a call's arguments, `crypt('pw', gen_salt('bf'))`):
        // each of its values is masked, up to its first key.
        site.lastIndex = maskListValues(text, valueStart + (call?.[0].length ?? 1) - 1, out, unquotedMask);
        continue;
      }
      const value = readValue(text, valueStart);
      if (value === undefined) {
        site.lastIndex = Math.max(valueStart, match.index + 1);
        continue;
      }
      out.mask(value, value.quote === '' ? unquotedMask : REDACTION_MASK);
      site.lastIndex = value.end;
    }
    return out.result();
  }

  /** The values of sensitive bare `key=value` sites within text[from, to), each ending by `to`. */
  #bareSiteValues(text: string, from: number, to: number): ValueSpan[] {
    const span = text.slice(from, to);
    const values: ValueSpan[] = [];
    const site = new RegExp(KEY_SITE.source, 'g');
    let match: RegExpExecArray | null;
    while ((match = site.exec(span)) !== null) {
      const key = match[4];
      const valueStart = match.index + match[0].length;
      const value = key !== undefined && match[5] !== undefined && this.isSensitiveKey(key) ? readValue(span, valueStart) : undefined;
      if (value === undefined) {
        site.lastIndex = Math.max(valueStart, match.index + 1);
        continue;
      }
      values.push({ ...value, contentStart: value.contentStart + from, contentEnd: value.contentEnd + from, end: value.end + from });
      site.lastIndex = value.end;
    }
    return values;
  }

  /** The `k 'v'` items of property lists (items with `=` are key sites, masked afterwards). */
  #maskPropertyLists(text: string): Redaction {
    const out = new Splicer(text);
    const list = new RegExp(PROPERTY_LIST.source, 'gi');
    let match: RegExpExecArray | null;
    while ((match = list.exec(text)) !== null) {
      let at = match.index + match[0].length;
      // One item per round: key, separator or space, value, then on to the next top-level comma.
      while (at < text.length) {
        at = skipSpace(text, at);
        const key = readListKey(text, at);
        if (key === undefined) break;
        let next = skipSpace(text, key.end);
        if (next > key.end && text[next] !== '=' && text[next] !== ':' && this.isSensitiveKey(key.name)) {
          const value = readValue(text, next);
          if (value !== undefined) {
            out.mask(value, REDACTION_MASK);
            next = value.end;
          }
        }
        const end = itemEnd(text, next);
        if (end >= text.length || text[end] === ')') {
          at = end;
          break;
        }
        at = end + 1;
      }
      list.lastIndex = Math.max(list.lastIndex, at);
    }
    return out.result();
  }
}

/** SQL's `IDENTIFIED BY 'pw'` (also MySQL's `IDENTIFIED WITH plugin BY 'pw'`, Oracle's `"pw"`). */
const IDENTIFIED_BY = /\bIDENTIFIED\s+(?:WITH\s+[\w'"-]{1,64}\s+)?BY\s+(?=['"])/gi;

function maskIdentifiedBy(text: string): Redaction {
  const out = new Splicer(text);
  for (const match of text.matchAll(IDENTIFIED_BY)) {
    const value = readValue(text, match.index + match[0].length);
    if (value !== undefined) out.mask(value, REDACTION_MASK);
  }
  return out.result();
}

/**
 * Where the authority of a URL (`user:password@host:port`) ends: its path, query or fragment,
 * whitespace, a quote or backslash (the end of the string it is in), `;` (JDBC/ODBC
 * properties, as in `sqlserver://h:1433;user=bob@corp`), `<` or `>`.
 */
const AUTHORITY_END = /[\s/?#;'"`<>\\]/;

/**
 * Masks the password of every `scheme://user:password@host`: the text between the first `:`
 * after `://` and the last `@` of the authority (a password may hold an unencoded `@`).
 * A URL without a password (`s3://bucket/k`, `ssh://git@host:22`) is left as it is.
 */
function maskUrlPasswords(text: string): Redaction {
  const out = new Splicer(text);
  let from = 0;
  for (;;) {
    const sep = text.indexOf('://', from);
    if (sep === -1) break;
    let end = sep + 3;
    let colon = -1;
    let at = -1;
    for (; end < text.length; end++) {
      const c = text[end] as string;
      if (AUTHORITY_END.test(c)) break;
      if (c === ':' && colon === -1) colon = end;
      else if (c === '@') at = end;
    }
    if (sep > 0 && /[A-Za-z0-9+.-]/.test(text[sep - 1] as string) && colon !== -1 && at > colon) {
      out.mask({ quote: '', content: text.slice(colon + 1, at), contentStart: colon + 1, contentEnd: at, end: at }, REDACTION_MASK);
    }
    // The authority may end at the `:` of a next `://`; nothing before it is read again.
    from = Math.max(sep + 3, end - 1);
  }
  return out.result();
}

/** A value's extent: its content (what is masked) and where the value ends, quotes included. */
interface ValueSpan {
  quote: string;
  content: string;
  contentStart: number;
  contentEnd: number;
  end: number;
}

/**
 * Reads the value at `at`: a quoted string (`"…"` with backslash escapes, `'…'` with `''` or
 * backslash escapes, `\"…\"` inside a JSON-encoded string) or an unquoted run up to a
 * delimiter. An unterminated quote runs to the end of the text: better to mask too much.
 * Undefined where there is nothing to mask: an object, array or parenthesized list (what is
 * inside is looked at on its own), `null`, an empty unquoted value, or another operator (`==`).
 */
function readValue(text: string, at: number): ValueSpan | undefined {
  const first = text[at];
  if (first === undefined) return undefined;
  if (first === '"' || first === "'" || first === '`') {
    const close = closingQuote(text, at + 1, first);
    return { quote: first, content: text.slice(at + 1, close), contentStart: at + 1, contentEnd: close, end: Math.min(text.length, close + 1) };
  }
  if (first === '\\' && text[at + 1] === '"') {
    const close = closingEscapedQuote(text, at + 2);
    return { quote: '\\"', content: text.slice(at + 2, close), contentStart: at + 2, contentEnd: close, end: Math.min(text.length, close + 2) };
  }
  if (first === '{' || first === '[' || first === '(' || first === '=' || first === '>') return undefined;
  let end = at;
  while (end < text.length && !BARE_VALUE_END.test(text[end] as string)) end++;
  const content = text.slice(at, end);
  if (content === '' || content === 'null') return undefined;
  return { quote: '', content, contentStart: at, contentEnd: end, end };
}

/**
 * A function's name and the parenthesis right after it opening its arguments, the first of them
 * a string or another call: `crypt('`, `encode(digest(`. (`Pa(ss)word` is no call, and in
 * `pwd=Q ('…` the value is `Q`.)
 */
const FUNCTION_CALL = /[A-Za-z_][\w.$]{0,255}\((?=[ \t]*(?:['"]|[A-Za-z_][\w.$]{0,255}\())/y;

/** A SQL subquery's first word: `password_hash = (SELECT …)` holds an expression, not values. */
const SUBQUERY = /(?:SELECT|WITH|VALUES|TABLE|FROM)\b/iy;

/** A key at the start of a list item: a bare or quoted name followed by `=`, `:` or a quoted SQL literal. */
const LIST_ITEM_KEY = /(?:[\w.$-]{1,256}|"[^"\\\r\n]{0,256}"|'[^'\\\r\n]{0,256}')(?:\s*[=:]|\s+')/y;

/**
 * Masks the values of the list (`[…]` or `(…)`) opening at `at`, the value of a sensitive key:
 * `"Authorization": ["Bearer …"]`, `password=(pw1, pw2)`, or the arguments of a call
 * (`password = crypt('pw', gen_salt('bf'))`). Nested lists and calls are walked too. At an
 * object, a subquery, or an item that is itself a key (`CREDENTIALS=(AWS_SECRET_KEY='…')`), the
 * walk stops and the index of that item is returned: what follows is scanned for keys as any text
 * is. Otherwise the index after the list. Each character is read once.
 */
function maskListValues(text: string, at: number, out: Splicer, unquotedMask: string): number {
  let depth = 0;
  let i = at;
  let masked = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '[' || c === '(') {
      depth++;
      i++;
    } else if (c === ']' || c === ')') {
      depth--;
      i++;
      if (depth === 0) return i;
    } else if (c === ',' || /\s/.test(c)) {
      i++;
    } else if (masked === LIST_VALUES_MASKED_ONE_BY_ONE) {
      // The rest of a long list is masked as one span: item by item, each costs a few pattern
      // tests (~1 µs), and a body of `password=(a a a …)` held the ingest parse thread ~4 s
      // for 8 MiB, every other sender's ingest behind it (review).
      const close = listEnd(text, i, depth);
      out.mask({ quote: '', content: text.slice(i, close), contentStart: i, contentEnd: close, end: close }, REDACTION_MASK);
      masked++;
      i = close;
      depth = 1;
    } else {
      LIST_ITEM_KEY.lastIndex = i;
      SUBQUERY.lastIndex = i;
      if (c === '{' || LIST_ITEM_KEY.test(text) || SUBQUERY.test(text)) return i;
      FUNCTION_CALL.lastIndex = i;
      if (FUNCTION_CALL.test(text)) {
        // A call among the values: its arguments are values too.
        i = FUNCTION_CALL.lastIndex - 1;
        continue;
      }
      if (text.startsWith('null', i) && !/[\w.$-]/.test(text[i + 4] ?? '')) {
        i += 4;
        continue;
      }
      const value = readValue(text, i);
      if (value === undefined) return i;
      out.mask(value, value.quote === '' ? unquotedMask : REDACTION_MASK);
      masked++;
      i = value.end;
    }
  }
  return i;
}

/** Values masked one by one in one text (field); past them, the rest of it is masked whole. */
const MASKED_VALUES_PER_TEXT_MAX = 256;

/** Values of one list masked one by one; past them, the rest of the list is masked whole. */
const LIST_VALUES_MASKED_ONE_BY_ONE = 64;

/**
 * The index of the bracket that closes, from `from` inside a list `depth` levels deep, the
 * outermost list (quoted strings skipped); text.length when none does.
 */
function listEnd(text: string, from: number, depth: number): number {
  let open = depth;
  for (let i = from; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '"' || c === "'" || c === '`') i = closingQuote(text, i + 1, c);
    else if (c === '[' || c === '(') open++;
    else if ((c === ']' || c === ')') && --open === 0) return i;
  }
  return text.length;
}

/** Index of the quote closing a string opened before `from` (text.length when none does). */
function closingQuote(text: string, from: number, quote: string): number {
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === quote) {
      // SQL doubles a quote inside a quoted string.
      if (quote === "'" && text[i + 1] === "'") {
        i++;
        continue;
      }
      return i;
    }
  }
  return text.length;
}

/**
 * Index of the `\"` closing a string inside a JSON-encoded string: the outer escapes are
 * undone on the way (`\\` is one backslash of the inner text, `\"` one quote), and the inner
 * string ends at its first quote not escaped by an inner backslash.
 */
function closingEscapedQuote(text: string, from: number): number {
  let innerEscaped = false;
  for (let i = from; i < text.length; i++) {
    const start = i;
    const raw = text[i];
    // A bare quote ends the enclosing string, and with it this one.
    if (raw === '"') return start;
    if (raw !== '\\') {
      innerEscaped = false;
      continue;
    }
    if (i + 1 >= text.length) break;
    const decoded = text[++i];
    if (innerEscaped) innerEscaped = false;
    else if (decoded === '\\') innerEscaped = true;
    else if (decoded === '"') return start;
  }
  return text.length;
}

function skipSpace(text: string, at: number): number {
  while (at < text.length && /\s/.test(text[at] as string)) at++;
  return at;
}

/** A property list key at `at`: quoted or a bare dotted name. */
function readListKey(text: string, at: number): { name: string; end: number } | undefined {
  const first = text[at];
  if (first === '"' || first === "'" || first === '`') {
    const close = closingQuote(text, at + 1, first);
    if (close >= text.length) return undefined;
    return { name: text.slice(at + 1, close), end: close + 1 };
  }
  let end = at;
  while (end < text.length && /[\w.$-]/.test(text[end] as string)) end++;
  return end === at ? undefined : { name: text.slice(at, end), end };
}

/** Index of the comma or parenthesis ending the list item at `at`, skipping quoted and nested text. */
function itemEnd(text: string, at: number): number {
  let depth = 0;
  for (let i = at; i < text.length; i++) {
    const c = text[i];
    if (c === '"' || c === "'" || c === '`') {
      i = closingQuote(text, i + 1, c);
    } else if (c === '(') {
      depth++;
    } else if (c === ')') {
      if (depth === 0) return i;
      depth--;
    } else if (c === ',' && depth === 0) {
      return i;
    }
  }
  return text.length;
}

/** Builds a text from an original and replacements made left to right. */
class Splicer {
  readonly #text: string;
  readonly #parts: string[] = [];
  #copied = 0;
  #count = 0;

  constructor(text: string) {
    this.#text = text;
  }

  /** Values masked so far. */
  get count(): number {
    return this.#count;
  }

  /** Replaces a value's content; an empty value or one already masked is left as it is. */
  mask(value: ValueSpan, replacement: string): void {
    if (value.content === '' || value.content === REDACTION_MASK) return;
    this.#parts.push(this.#text.slice(this.#copied, value.contentStart), replacement);
    this.#copied = value.contentEnd;
    this.#count++;
  }

  result(): Redaction {
    if (this.#count === 0) return { text: this.#text, count: 0 };
    this.#parts.push(this.#text.slice(this.#copied));
    return { text: this.#parts.join(''), count: this.#count };
  }
}
