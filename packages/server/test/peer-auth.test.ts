// Goal: with a cluster secret, a peer request is good only at the URL it was signed for, with its
// body, for a few minutes; an answer is taken only when it proves the secret — so the cluster
// token a reader of Redis holds opens nothing, and a fake leader Redis was made to name gets
// nothing it can use and gives nothing that is taken.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { httpPeerTransport, PEER_PROOF_FRESH_MS } from '../src/http-peer-transport.js';
import { startTestNode } from './test-node.js';
import { PEER_PROOF_HEADER, PEER_SIGNATURE_HEADER, PEER_SIGNATURE_SKEW_MS, PeerNonces, bodyDigest, checkPeerAnswer, checkPeerRequest, peerAnswerProof, signPeerRequest, unsignedReason } from '../src/peer-auth.js';

const SECRET = 'cluster-secret-for-peer-auth-tests-0123456789';
const LEADER = 'http://10.0.0.1:7070/internal/v1/pull';
const NOW = Date.UTC(2026, 11, 6, 8);
const body = Buffer.from('{"after":0}');
const digest = bodyDigest([body]);

describe('peer request signatures', () => {
  it('verify at the URL, with the body and within the skew they were signed for', () => {
    const signature = signPeerRequest(SECRET, LEADER, body, NOW);
    expect(checkPeerRequest(SECRET, LEADER, signature, digest, NOW + PEER_SIGNATURE_SKEW_MS)).toEqual({ ok: true, signature });
    // Each signature is new (a nonce), even for the same request at the same time.
    expect(signPeerRequest(SECRET, LEADER, body, NOW)).not.toBe(signature);
  });

  it('are refused with the reason: another secret, another node, another body, too old, none or malformed', () => {
    const signature = signPeerRequest(SECRET, LEADER, body, NOW);
    const refusal = (secret: string, url: string, header: string | undefined, bodyDigestText: string, now: number) => {
      const check = checkPeerRequest(secret, url, header, bodyDigestText, now);
      return check.ok ? 'accepted' : check.reason;
    };
    expect(refusal('another-cluster-secret-0123456789abcdef', LEADER, signature, digest, NOW)).toMatch(/^peer request signature does not verify for http:\/\/10\.0\.0\.1:7070\/internal\/v1\/pull: the sender holds another cluster secret/);
    // Signed for a fake leader, sent on to the real one.
    expect(refusal(SECRET, 'http://10.0.0.2:7070/internal/v1/pull', signature, digest, NOW)).toMatch(/does not verify/);
    expect(refusal(SECRET, LEADER, signature, bodyDigest([Buffer.from('{"after":5}')]), NOW)).toMatch(/does not verify/);
    expect(refusal(SECRET, LEADER, signature, digest, NOW + PEER_SIGNATURE_SKEW_MS + 1_000)).toBe("peer request signed 301 s from this node's clock (more than 300 s): a replay, or clocks far apart");
    expect(refusal(SECRET, LEADER, undefined, digest, NOW)).toBe('this node takes only peer requests signed with the cluster secret (auditlake.cluster.secret): configure the same secret on every node; the request carries no signature');
    for (const malformed of ['', 'x.y.z', `${NOW}.${'0'.repeat(24)}`, `${NOW}.${'0'.repeat(24)}.${'g'.repeat(64)}`, `${signature}.extra`]) {
      expect(refusal(SECRET, LEADER, malformed, digest, NOW)).toMatch(/its signature is malformed$/);
      expect(unsignedReason(malformed)).toMatch(/its signature is malformed$/);
    }
    expect(unsignedReason(undefined)).toMatch(/the request carries no signature$/);
    expect(unsignedReason(signature)).toBeUndefined();
  });

  it('have one spelling of their time: another spelling of the same number is refused, not a second signature (review)', () => {
    const signature = signPeerRequest(SECRET, LEADER, body, NOW);
    const [, nonce, mac] = signature.split('.');
    for (const time of [`0x${NOW.toString(16)}`, `+${NOW}`, ` ${NOW} `, `${NOW}e0`, `0${NOW}`, `${NOW}.0`]) {
      const check = checkPeerRequest(SECRET, LEADER, `${time}.${nonce}.${mac}`, digest, NOW);
      expect(check.ok ? 'accepted' : check.reason).toMatch(/malformed|does not verify/);
    }
  });

  it('are taken once: the same signed request sent again within the skew is refused as a replay (review)', () => {
    const nonces = new PeerNonces();
    const signature = signPeerRequest(SECRET, LEADER, body, NOW);
    expect(checkPeerRequest(SECRET, LEADER, signature, digest, NOW, nonces)).toEqual({ ok: true, signature });
    const again = checkPeerRequest(SECRET, LEADER, signature, digest, NOW + 60_000, nonces);
    expect(again).toEqual({ ok: false, reason: 'peer request replayed: a request with its signature was taken before (each signed request is taken once)' });
    // A request whose signature does not verify is not remembered (only the cluster's own traffic fills the set).
    expect(checkPeerRequest(SECRET, 'http://10.0.0.2:7070/internal/v1/pull', signPeerRequest(SECRET, LEADER, body, NOW), digest, NOW, nonces).ok).toBe(false);
    expect(nonces.size).toBe(1);
    // Past the skew it is forgotten (the time check refuses it from then on), so the set stays bounded.
    expect(checkPeerRequest(SECRET, LEADER, signPeerRequest(SECRET, LEADER, body, NOW + PEER_SIGNATURE_SKEW_MS + 1), digest, NOW + PEER_SIGNATURE_SKEW_MS + 1, nonces).ok).toBe(true);
    expect(nonces.size).toBe(1);
    expect(checkPeerRequest(SECRET, LEADER, signature, digest, NOW + PEER_SIGNATURE_SKEW_MS + 1, nonces)).toMatchObject({ ok: false, reason: expect.stringMatching(/^peer request signed -?\d+ s from this node's clock/) });
  });

  it('answers prove the secret over the request signature and the answer body', () => {
    const signature = signPeerRequest(SECRET, LEADER, body, NOW);
    const answer = Buffer.from('{"accepted":1}');
    const proof = peerAnswerProof(SECRET, signature, bodyDigest([answer]));
    expect(checkPeerAnswer(SECRET, signature, proof, answer)).toBe(true);
    expect(checkPeerAnswer(SECRET, signature, proof, Buffer.from('{"accepted":2}'))).toBe(false);
    expect(checkPeerAnswer(SECRET, signPeerRequest(SECRET, LEADER, body, NOW), proof, answer)).toBe(false);
    expect(checkPeerAnswer(SECRET, signature, undefined, answer)).toBe(false);
  });
});

describe('the peer transport with a cluster secret', () => {
  it('without a secret counts every peer as proven (nothing changes)', () => {
    const transport = httpPeerTransport(async () => 'token');
    expect(transport.proven('http://127.0.0.1:1')).toBe(true);
    transport.close();
  });

  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  const PULL_ANSWER = Buffer.from('{"term":1,"nodeId":"n0","lastSeq":0}');
  const FORWARD_ANSWER = Buffer.from('{"accepted":1}');

  /**
   * A peer that records what it was sent and answers a pull with no entries and a forward with
   * `{"accepted":1}`, with a proof under `proof.secret` (none when undefined; changeable).
   */
  async function peer(proof: { secret: string | undefined }): Promise<{ url: string; seen: Array<{ url: string; signature: string | undefined; token: string | undefined; body: string }> }> {
    const seen: Array<{ url: string; signature: string | undefined; token: string | undefined; body: string }> = [];
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const signature = req.headers[PEER_SIGNATURE_HEADER] as string | undefined;
        seen.push({ url: req.url ?? '', signature, token: req.headers['x-auditlake-cluster-token'] as string | undefined, body: Buffer.concat(chunks).toString('utf8') });
        const answer = req.url?.endsWith('/pull') ? PULL_ANSWER : FORWARD_ANSWER;
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (proof.secret !== undefined && signature !== undefined) headers[PEER_PROOF_HEADER] = peerAnswerProof(proof.secret, signature, bodyDigest([answer]));
        res.writeHead(200, headers).end(answer);
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
  }

  const PULL = { nodeId: 'n1', after: 0, lastTerm: 0, term: 1, limit: 10, waitMs: 0, metaHash: '', catchUp: false };
  const events = ['{"eventId":"e1","query":"SELECT ssn FROM payroll"}'];

  it('signs each request for the URL it is sent to, and forwards events only to a peer a pull proved (review: a fake leader got them in full)', async () => {
    const target = await peer({ secret: SECRET });
    const transport = httpPeerTransport(async () => 'token', SECRET);
    try {
      expect(transport.proven(target.url)).toBe(false);
      // Not proven: nothing is sent, the events wait.
      await expect(transport.forward(target.url, { nodeId: 'n1', term: 1, events }, 5_000)).rejects.toThrow(
        `${target.url} has not proven the cluster secret in the last 10 s (a pull from it answers with a proof): forwarded events wait in the outbox rather than go to a node that may not belong to this cluster`,
      );
      expect(target.seen).toEqual([]);
      // A pull carries no event and proves the peer.
      await expect(transport.pull(target.url, PULL, 5_000)).resolves.toMatchObject({ nodeId: 'n0', entries: [] });
      expect(transport.proven(target.url)).toBe(true);
      expect(transport.proven('http://127.0.0.1:1')).toBe(false);
      await expect(transport.forward(target.url, { nodeId: 'n1', term: 1, events }, 5_000)).resolves.toEqual({ accepted: 1 });
      expect(target.seen.map((sent) => sent.url)).toEqual(['/internal/v1/pull', '/internal/v1/forward']);
      expect(target.seen[1]?.body).toContain('payroll');
      for (const sent of target.seen) {
        expect(sent.token).toBe('token');
        expect(sent.signature).toMatch(/^\d+\.[0-9a-f]{24}\.[0-9a-f]{64}$/);
      }
    } finally {
      transport.close();
    }
  });

  it('refuses the answer of a peer that does not prove it (a fake leader, or one with another secret), which stays unproven and is sent no events', async () => {
    for (const secret of [undefined, 'another-cluster-secret-0123456789abcdef']) {
      const target = await peer({ secret });
      const transport = httpPeerTransport(async () => 'token', SECRET);
      try {
        await expect(transport.pull(target.url, PULL, 5_000)).rejects.toThrow(
          `${target.url}/internal/v1/pull answered without proving the cluster secret (auditlake.cluster.secret): it is not a node of this cluster, or its secret differs; its answer is not used`,
        );
        expect(transport.proven(target.url)).toBe(false);
        await expect(transport.forward(target.url, { nodeId: 'n1', term: 1, events }, 5_000)).rejects.toThrow(/has not proven the cluster secret/);
        expect(target.seen.map((sent) => sent.url)).toEqual(['/internal/v1/pull']);
      } finally {
        transport.close();
        await new Promise<void>((resolve) => server!.close(() => resolve()));
        server = undefined;
      }
    }
  });

  it('ages a proof on a clock no step of the wall clock moves: past PEER_PROOF_FRESH_MS the peer is unproven until it answers again (review)', async () => {
    const target = await peer({ secret: SECRET });
    let monotonic = 1_000;
    const transport = httpPeerTransport(async () => 'token', SECRET, () => monotonic);
    try {
      await transport.pull(target.url, PULL, 5_000);
      expect(transport.proven(target.url)).toBe(true);
      monotonic += PEER_PROOF_FRESH_MS;
      expect(transport.proven(target.url)).toBe(true);
      monotonic += 1;
      expect(transport.proven(target.url)).toBe(false);
      await transport.pull(target.url, PULL, 5_000);
      expect(transport.proven(target.url)).toBe(true);
    } finally {
      transport.close();
    }
  });

  it('ends a proof at the first failed call: an impostor at a proven URL is not vouched for by the earlier proof (review)', async () => {
    const proof = { secret: SECRET as string | undefined };
    const target = await peer(proof);
    const transport = httpPeerTransport(async () => 'token', SECRET);
    try {
      await transport.pull(target.url, PULL, 5_000);
      expect(transport.proven(target.url)).toBe(true);
      // Another process answers at that address now, without the secret.
      proof.secret = undefined;
      await expect(transport.pull(target.url, PULL, 5_000)).rejects.toThrow(/answered without proving the cluster secret/);
      expect(transport.proven(target.url)).toBe(false);
      proof.secret = SECRET;
      await transport.pull(target.url, PULL, 5_000);
      expect(transport.proven(target.url)).toBe(true);
      // Nothing answers there any more.
      await new Promise<void>((resolve) => server!.close(() => resolve()));
      server = undefined;
      await expect(transport.pull(target.url, PULL, 5_000)).rejects.toThrow();
      expect(transport.proven(target.url)).toBe(false);
    } finally {
      transport.close();
    }
  });
});

describe('auditlake.cluster.secret', () => {
  it('is refused at start when shorter than 32 characters, without repeating it', async () => {
    const start = startTestNode({ props: { 'auditlake.cluster.secret': 'too-short-a-secret' } });
    await expect(start).rejects.toThrow('auditlake.cluster.secret is 18 characters; at least 32 are required (e.g. openssl rand -base64 32), the same on every node');
    await expect(start).rejects.not.toThrow(/too-short-a-secret/);
  });
});
