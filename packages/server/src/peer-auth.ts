import { createHash, createHmac, randomBytes } from 'node:crypto';
import { digest, matchesDigest } from './auth/constant-time.js';

/**
 * Peer requests signed with the cluster secret (`auditlake.cluster.secret`), and answers that
 * prove it.
 *
 * Why: the cluster token lives in the coordinator (Redis), so whoever could read Redis could
 * pull the whole log from /internal/v1/pull and forward forged records, erasures included, to
 * /internal/v1/forward (security review, reproduced). The secret is configured on each node and
 * never leaves it: a request carries an HMAC of the URL it was sent to, its time and its body,
 * so it is good only at that node, for a few minutes, with that body — a node that sends it to a
 * fake leader (Redis rewritten to name one) gives that fake nothing it can use at the real
 * leader. An answer carries an HMAC of the request's signature and the answer's body, so a node
 * takes entries only from a peer holding the secret.
 */

/** `<timeMs>.<nonce>.<hmac hex>` on a request. */
export const PEER_SIGNATURE_HEADER = 'x-auditlake-peer-signature';
/** The HMAC hex of an answer. */
export const PEER_PROOF_HEADER = 'x-auditlake-peer-proof';
/** A request signed further than this from the receiver's clock is refused; a cluster's clocks agree far better. */
export const PEER_SIGNATURE_SKEW_MS = 5 * 60_000;
/** Fewer characters than this are refused at start: a guessable secret is no secret. */
export const CLUSTER_SECRET_CHARS_MIN = 32;

function mac(secret: string, text: string): string {
  return createHmac('sha256', secret).update(text, 'utf8').digest('hex');
}

/** SHA-256 of a body given in parts, hex. */
export function bodyDigest(parts: readonly Uint8Array[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest('hex');
}

function requestText(url: string, timeMs: number, nonce: string, bodyHash: string): string {
  return `auditlake-peer-request/1\n${url}\n${timeMs}\n${nonce}\n${bodyHash}`;
}

/** The signature header of a POST of `body` to `url` (the full URL the peer is addressed by). */
export function signPeerRequest(secret: string, url: string, body: Uint8Array, nowMs: number): string {
  const nonce = randomBytes(12).toString('hex');
  return `${nowMs}.${nonce}.${mac(secret, requestText(url, nowMs, nonce, bodyDigest([body])))}`;
}

export type PeerRequestCheck = { ok: true; signature: string } | { ok: false; reason: string };

const UNSIGNED = 'this node takes only peer requests signed with the cluster secret (auditlake.cluster.secret): configure the same secret on every node';

/** A signature header's parts; the time as decimal digits without leading zeros, so one signature has one spelling (`0x…`, `+…`, `0…`, `…e0` were the same MAC). */
function signatureParts(header: string | string[] | undefined): { timeMs: number; nonce: string; mac: string } | { reason: string } {
  if (typeof header !== 'string') return { reason: `${UNSIGNED}; the request carries no signature` };
  const [timeText, nonce, mac, ...rest] = header.split('.');
  if (rest.length > 0 || timeText === undefined || !/^(?:0|[1-9]\d{0,15})$/.test(timeText) || nonce === undefined || mac === undefined || !/^[0-9a-f]{24}$/.test(nonce) || !/^[0-9a-f]{64}$/.test(mac)) {
    return { reason: `${UNSIGNED}; its signature is malformed` };
  }
  const timeMs = Number(timeText);
  return Number.isSafeInteger(timeMs) ? { timeMs, nonce, mac } : { reason: `${UNSIGNED}; its signature is malformed` };
}

/**
 * Why a request cannot be a signed one, judged from its signature header alone (no secret
 * needed), or undefined: refused before its body (up to 64 MiB) is read.
 */
export function unsignedReason(header: string | string[] | undefined): string | undefined {
  const parts = signatureParts(header);
  return 'reason' in parts ? parts.reason : undefined;
}

/**
 * The nonces of the signed requests a node took, each kept until its signature's time is past
 * the skew (when the time check alone refuses it): a request captured on the wire (peer traffic
 * is plain HTTP) and sent again is refused, not served twice. Only requests whose signature
 * verified are kept, so only the cluster's own traffic fills it.
 */
export class PeerNonces {
  /** Nonce → the time after which its request is refused by its time anyway. Insertion order. */
  readonly #until = new Map<string, number>();

  /** True (and remembered) the first time; false for a nonce seen before. */
  admit(nonce: string, timeMs: number, nowMs: number): boolean {
    // Forget from the oldest while expired: amortised constant work per request.
    for (const [seen, until] of this.#until) {
      if (until >= nowMs) break;
      this.#until.delete(seen);
    }
    if (this.#until.has(nonce)) return false;
    this.#until.set(nonce, timeMs + PEER_SIGNATURE_SKEW_MS);
    return true;
  }

  get size(): number {
    return this.#until.size;
  }
}

/**
 * Whether `header` signs a POST of the body whose SHA-256 is `bodyHash` to `url` (this node's own
 * address, as it publishes it, and the request's path), within PEER_SIGNATURE_SKEW_MS of now,
 * and — given `nonces` — was not taken before.
 */
export function checkPeerRequest(secret: string, url: string, header: string | string[] | undefined, bodyHash: string, nowMs: number, nonces?: PeerNonces): PeerRequestCheck {
  const parts = signatureParts(header);
  if ('reason' in parts) return { ok: false, reason: parts.reason };
  const { timeMs, nonce, mac: signature } = parts;
  if (Math.abs(nowMs - timeMs) > PEER_SIGNATURE_SKEW_MS) return { ok: false, reason: `peer request signed ${Math.round((nowMs - timeMs) / 1000)} s from this node's clock (more than ${PEER_SIGNATURE_SKEW_MS / 1000} s): a replay, or clocks far apart` };
  if (!matchesDigest(signature, digest(mac(secret, requestText(url, timeMs, nonce, bodyHash))))) {
    return { ok: false, reason: `peer request signature does not verify for ${url}: the sender holds another cluster secret, or the request was signed for another node or altered` };
  }
  if (nonces !== undefined && !nonces.admit(nonce, timeMs, nowMs)) return { ok: false, reason: 'peer request replayed: a request with its signature was taken before (each signed request is taken once)' };
  return { ok: true, signature: header as string };
}

/** The proof header of an answer whose body's SHA-256 is `bodyHash` to a request signed `requestSignature`. */
export function peerAnswerProof(secret: string, requestSignature: string, bodyHash: string): string {
  return mac(secret, `auditlake-peer-answer/1\n${requestSignature}\n${bodyHash}`);
}

/** Whether an answer's proof header fits the request's signature and the answer's body. */
export function checkPeerAnswer(secret: string, requestSignature: string, header: string | string[] | undefined, body: Uint8Array): boolean {
  return typeof header === 'string' && matchesDigest(header, digest(peerAnswerProof(secret, requestSignature, bodyDigest([body]))));
}
