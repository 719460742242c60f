import { randomUUID } from 'node:crypto';

/**
 * A UUIDv7 (RFC 9562): 48 bits of epoch ms, then random bits. Time-ordered, so ids the node
 * assigns sort roughly by creation, and unique without coordination between nodes.
 * Built from `randomUUID()` (a v4, whose random bits come from a cached entropy pool, which
 * keeps id generation off the ingest profile): its first 48 bits become the time and its
 * version nibble 7; the variant bits are already RFC 9562's.
 */
export function newEventId(nowMs: number = Date.now()): string {
  const v4 = randomUUID();
  const time = nowMs.toString(16).padStart(12, '0').slice(-12);
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${v4.slice(15)}`;
}
