import type { ForwardRequest, PullResponse } from '@auditlake/cluster';

/**
 * The wire form of the two bulky peer messages: NDJSON, a header line then one line per event.
 * Events are already JSON text (as stored, or as held in the outbox), so they are written as
 * they are rather than escaped into a JSON string or parsed and serialised again; JSON text
 * never holds a raw newline, which is what makes a line a safe frame.
 */
export const PEER_WIRE_CONTENT_TYPE = 'application/x-ndjson';

function encode(header: object, lines: readonly string[]): string {
  return lines.length === 0 ? JSON.stringify(header) : JSON.stringify(header) + '\n' + lines.join('\n');
}

function decode(text: string, what: string): { header: unknown; lines: string[] } {
  const lines = text.split('\n');
  const first = lines.shift();
  if (first === undefined || first === '') throw new TypeError(`${what}: empty message`);
  return { header: JSON.parse(first) as unknown, lines };
}

function headerObject(header: unknown, what: string): Record<string, unknown> {
  if (typeof header !== 'object' || header === null || Array.isArray(header)) throw new TypeError(`${what}: the first line must be a JSON object`);
  return header as Record<string, unknown>;
}

const NEWLINE = Buffer.from('\n');
const NEWLINE_BYTE = 0x0a;

/** A pull answer as bytes: the entries are bytes already and are copied in, never decoded. */
export function encodePullResponse(response: PullResponse): Buffer {
  const { entries, ...header } = response;
  const parts: Uint8Array[] = [Buffer.from(JSON.stringify(header), 'utf8')];
  for (const entry of entries) parts.push(NEWLINE, entry);
  return Buffer.concat(parts);
}

/** The entries are views into `body`, one per line after the header. */
export function decodePullResponse(body: Buffer): PullResponse {
  let end = body.indexOf(NEWLINE_BYTE);
  if (end === -1) end = body.length;
  if (end === 0) throw new TypeError('pull answer: empty message');
  const header = headerObject(JSON.parse(body.subarray(0, end).toString('utf8')) as unknown, 'pull answer') as Omit<PullResponse, 'entries'>;
  // An older node answers with one JSON object holding its entries: refuse it loudly rather
  // than read it as a header with no entries (which would look like an idle leader forever).
  if ('entries' in header) throw new TypeError('pull answer is in the JSON format of an older auditlake: every node of a cluster must run the same version');
  const entries: Uint8Array[] = [];
  for (let start = end + 1; start <= body.length; ) {
    let next = body.indexOf(NEWLINE_BYTE, start);
    if (next === -1) next = body.length;
    entries.push(body.subarray(start, next));
    start = next + 1;
  }
  return { ...header, entries };
}

export function encodeForwardRequest(request: ForwardRequest): string {
  const { events, ...header } = request;
  return encode(header, events);
}

export function decodeForwardRequest(text: string): ForwardRequest {
  const { header, lines } = decode(text, 'forward request');
  const fields = headerObject(header, 'forward request');
  if (typeof fields['nodeId'] !== 'string' || typeof fields['term'] !== 'number') throw new TypeError('forward request: the header needs nodeId and term');
  return { nodeId: fields['nodeId'], term: fields['term'], events: lines };
}
