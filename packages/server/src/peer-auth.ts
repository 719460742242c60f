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

/**
 * Whether `header` signs a POST of the body whose SHA-256 is `bodyHash` to `url` (this node's own
 * address, as it publishes it, and the request's path), within PEER_SIGNATURE_SKEW_MS of now.
 */
export function checkPeerRequest(secret: string, url: string, header: string | string[] | undefined, bodyHash: string, nowMs: number): PeerRequestCheck {
  const unsigned = 'this node takes only peer requests signed with the cluster secret (auditlake.cluster.secret): configure the same secret on every node';
  if (typeof header !== 'string') return { ok: false, reason: `${unsigned}; the request carries no signature` };
  const [timeText, nonce, signature, ...rest] = header.split('.');
  const timeMs = Number(timeText);
  if (rest.length > 0 || nonce === undefined || signature === undefined || !/^[0-9a-f]{24}$/.test(nonce) || !/^[0-9a-f]{64}$/.test(signature) || !Number.isSafeInteger(timeMs)) {
    return { ok: false, reason: `${unsigned}; its signature is malformed` };
  }
  if (Math.abs(nowMs - timeMs) > PEER_SIGNATURE_SKEW_MS) return { ok: false, reason: `peer request signed ${Math.round((nowMs - timeMs) / 1000)} s from this node's clock (more than ${PEER_SIGNATURE_SKEW_MS / 1000} s): a replay, or clocks far apart` };
  if (!matchesDigest(signature, digest(mac(secret, requestText(url, timeMs, nonce, bodyHash))))) {
    return { ok: false, reason: `peer request signature does not verify for ${url}: the sender holds another cluster secret, or the request was signed for another node or altered` };
  }
  return { ok: true, signature: header };
}

/** The proof header of an answer whose body's SHA-256 is `bodyHash` to a request signed `requestSignature`. */
export function peerAnswerProof(secret: string, requestSignature: string, bodyHash: string): string {
  return mac(secret, `auditlake-peer-answer/1\n${requestSignature}\n${bodyHash}`);
}

/** Whether an answer's proof header fits the request's signature and the answer's body. */
export function checkPeerAnswer(secret: string, requestSignature: string, header: string | string[] | undefined, body: Uint8Array): boolean {
  return typeof header === 'string' && matchesDigest(header, digest(peerAnswerProof(secret, requestSignature, bodyDigest([body]))));
}
