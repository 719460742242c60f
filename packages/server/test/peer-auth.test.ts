// Goal: with a cluster secret, a peer request is good only at the URL it was signed for, with its
// body, for a few minutes; an answer is taken only when it proves the secret — so the cluster
// token a reader of Redis holds opens nothing, and a fake leader Redis was made to name gets
// nothing it can use and gives nothing that is taken.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { httpPeerTransport } from '../src/http-peer-transport.js';
import { startTestNode } from './test-node.js';
import { PEER_PROOF_HEADER, PEER_SIGNATURE_HEADER, PEER_SIGNATURE_SKEW_MS, bodyDigest, checkPeerAnswer, checkPeerRequest, peerAnswerProof, signPeerRequest } from '../src/peer-auth.js';

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
    }
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
    expect(transport.provenWithin('http://127.0.0.1:1', 0)).toBe(true);
    transport.close();
  });

  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  /** A peer that records what it was sent and answers `{"accepted":1}`, with a proof under `proofSecret` (none when undefined). */
  async function peer(proofSecret: string | undefined): Promise<{ url: string; seen: Array<{ url: string; signature: string | undefined; token: string | undefined }> }> {
    const seen: Array<{ url: string; signature: string | undefined; token: string | undefined }> = [];
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const signature = req.headers[PEER_SIGNATURE_HEADER] as string | undefined;
        seen.push({ url: req.url ?? '', signature, token: req.headers['x-auditlake-cluster-token'] as string | undefined });
        const answer = Buffer.from('{"accepted":1}');
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (proofSecret !== undefined && signature !== undefined) headers[PEER_PROOF_HEADER] = peerAnswerProof(proofSecret, signature, bodyDigest([answer]));
        res.writeHead(200, headers).end(answer);
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
  }

  it('signs each request for the URL it is sent to and takes an answer that proves the secret', async () => {
    const target = await peer(SECRET);
    const transport = httpPeerTransport(async () => 'token', SECRET);
    try {
      expect(transport.provenWithin(target.url, 60_000)).toBe(false);
      await expect(transport.forward(target.url, { nodeId: 'n1', term: 1, events: [] }, 5_000)).resolves.toEqual({ accepted: 1 });
      // Proven: client requests may now be passed to it (Membership.leaderUrl).
      expect(transport.provenWithin(target.url, 60_000)).toBe(true);
      expect(transport.provenWithin('http://127.0.0.1:1', 60_000)).toBe(false);
      const [sent] = target.seen;
      expect(sent?.token).toBe('token');
      expect(sent?.signature).toMatch(/^\d+\.[0-9a-f]{24}\.[0-9a-f]{64}$/);
    } finally {
      transport.close();
    }
  });

  it('refuses the answer of a peer that does not prove it: a fake leader, or one with another secret', async () => {
    for (const proofSecret of [undefined, 'another-cluster-secret-0123456789abcdef']) {
      const target = await peer(proofSecret);
      const transport = httpPeerTransport(async () => 'token', SECRET);
      try {
        const refused = transport.forward(target.url, { nodeId: 'n1', term: 1, events: [] }, 5_000);
        await refused.catch(() => undefined);
        expect(transport.provenWithin(target.url, 60_000)).toBe(false);
        await expect(refused).rejects.toThrow(`${target.url}/internal/v1/forward answered without proving the cluster secret (auditlake.cluster.secret): it is not a node of this cluster, or its secret differs; its answer is not used`);
      } finally {
        transport.close();
        await new Promise<void>((resolve) => server!.close(() => resolve()));
        server = undefined;
      }
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
