import type { ForwardRequest, PullResponse } from '@auditlake/cluster';
import { joinLines, lineRuns, splitLines } from './byte-lines.js';

/**
 * The wire form of the two bulky peer messages: NDJSON, a header line then one line per event.
 * Events are already JSON text (as stored, or as held in the outbox), so they are written as
 * they are rather than escaped into a JSON string or parsed and serialised again; JSON text
 * never holds a raw newline, which is what makes a line a safe frame.
 */
export const PEER_WIRE_CONTENT_TYPE = 'application/x-ndjson';

function headerObject(header: unknown, what: string): Record<string, unknown> {
  if (typeof header !== 'object' || header === null || Array.isArray(header)) throw new TypeError(`${what}: the first line must be a JSON object`);
  return header as Record<string, unknown>;
}

/**
 * A pull answer as the slices of bytes to send one after the other: the entries are bytes
 * already, never decoded, and entries from a leader's log tail go out as slices of it, not
 * copied (lineRuns).
 */
export function encodePullResponse(response: PullResponse): Uint8Array[] {
  const { entries, ...header } = response;
  return lineRuns([Buffer.from(JSON.stringify(header), 'utf8'), ...entries]);
}

/** The entries are views into `body`, one per line after the header. */
export function decodePullResponse(body: Buffer): PullResponse {
  const [first, ...entries] = splitLines(body);
  if (first === undefined || first.length === 0) throw new TypeError('pull answer: empty message');
  const header = headerObject(JSON.parse(first.toString('utf8')) as unknown, 'pull answer') as Omit<PullResponse, 'entries'>;
  // An older node answers with one JSON object holding its entries: refuse it loudly rather
  // than read it as a header with no entries (which would look like an idle leader forever).
  if ('entries' in header) throw new TypeError('pull answer is in the JSON format of an older auditlake: every node of a cluster must run the same version');
  return { ...header, entries };
}

/**
 * A forward request as bytes, each line encoded on its own (byte-lines.ts says why).
 */
export function encodeForwardRequest(request: ForwardRequest): Buffer {
  const { events, ...header } = request;
  return joinLines([Buffer.from(JSON.stringify(header), 'utf8'), ...events.map((event) => Buffer.from(event, 'utf8'))]);
}

export function decodeForwardRequest(body: Buffer): ForwardRequest {
  const [first, ...rest] = splitLines(body);
  if (first === undefined || first.length === 0) throw new TypeError('forward request: empty message');
  const fields = headerObject(JSON.parse(first.toString('utf8')) as unknown, 'forward request');
  if (typeof fields['nodeId'] !== 'string' || typeof fields['term'] !== 'number') throw new TypeError('forward request: the header needs nodeId and term');
  const request: ForwardRequest = { nodeId: fields['nodeId'], term: fields['term'], events: rest.map((line) => line.toString('utf8')) };
  const flags = fields['newIdFlags'];
  if (flags !== undefined) {
    if (typeof flags !== 'string' || flags.length !== request.events.length) throw new TypeError('forward request: newIdFlags must be a string with one character per event');
    request.newIdFlags = flags;
  }
  return request;
}
