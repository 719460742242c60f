// Goal: an erased value cannot be recovered from what the store keeps of its record. The values
// erasure exists for come from small known sets (a company directory, the catalog), so "not
// stored" is not enough: whoever reads the store must not be able to confirm a guess by hashing
// candidates against anything the erased record keeps.
import { createHash } from 'node:crypto';
import { ChainVerifier, type VerifyRecord } from '@auditlake/integrity';
import { describe, expect, it } from 'vitest';
import { event, startTestNode, type TestNode } from './test-node.js';

async function records(t: TestNode): Promise<VerifyRecord[]> {
  const res = await t.request('/admin/audit/integrity/records?limit=10000');
  expect(res.status).toBe(200);
  return (await res.text())
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as VerifyRecord);
}

/** Every string a stored record holds, however deep (values, kept hashes, salts). */
function keptStrings(value: unknown, into: string[] = []): string[] {
  if (typeof value === 'string') into.push(value);
  else if (Array.isArray(value)) for (const item of value) keptStrings(item, into);
  else if (typeof value === 'object' && value !== null) for (const item of Object.values(value)) keptStrings(item, into);
  return into;
}

/**
 * Every salt a reader could try from what is kept: none (a plain hash); each kept string and each
 * `.`-separated piece of one, as its text and as the bytes it encodes in base64url; and the
 * SHA-512 derivation of those bytes, cut into 12-byte pieces, as bytes and as base64url text —
 * whatever the format, a kept salt is one of these.
 */
function candidateSalts(kept: readonly string[]): Buffer[] {
  const salts: Buffer[] = [Buffer.alloc(0)];
  const withText = (bytes: Buffer) => salts.push(bytes, Buffer.from(bytes.toString('base64url'), 'ascii'));
  for (const text of kept) {
    for (const piece of [text, ...text.split('.')]) {
      if (!/^[A-Za-z0-9_-]+$/.test(piece)) continue;
      salts.push(Buffer.from(piece, 'ascii'));
      const bytes = Buffer.from(piece, 'base64url');
      withText(bytes);
      const derived = createHash('sha512').update(bytes).digest();
      for (let at = 0; at + 12 <= derived.length; at += 12) withText(derived.subarray(at, at + 12));
    }
  }
  return salts;
}

/** Whether a guess of an erased value is confirmed by a hash computable from what is kept. */
function confirms(guess: string, record: VerifyRecord): boolean {
  const kept = keptStrings(record);
  const hexes = new Set(kept.filter((text) => /^[0-9a-f]{64}$/.test(text)));
  return candidateSalts(kept).some((salt) => hexes.has(createHash('sha256').update(salt).update(guess, 'utf8').digest('hex')));
}

describe('erasure leaves nothing that confirms a guess of the erased value', () => {
  it('erases a userId from a small directory: no candidate can be confirmed, and the record still verifies', async () => {
    const t = await startTestNode();
    const directory = ['alice', 'bob', 'carol', 'dave', 'erin'];
    expect((await t.ingest([event({ eventId: 'g1', userId: 'carol', resource: 'hr.people', query: 'SELECT salary FROM hr.people' }), event({ eventId: 'g2', userId: 'dave' })])).status).toBe(200);
    const before = (await records(t)).find((r) => r.eventId === 'g1') as VerifyRecord;
    // The reader's method works: a plain kept hash, or one salted with a salt kept beside it, is confirmed.
    expect(confirms('carol', { ...before, erased: { userId: createHash('sha256').update('carol').digest('hex') } })).toBe(true);
    const salt = before.salt as string;
    const userSalt = createHash('sha512').update(Buffer.from(salt, 'base64url')).digest().subarray(0, 12).toString('base64url');
    expect(confirms('carol', { ...before, erased: { userId: createHash('sha256').update(userSalt + 'carol').digest('hex') } })).toBe(true);
    const res = await t.request('/admin/audit/erase', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventIds: ['g1'], fields: ['userId'] }) });
    expect(res.status).toBe(200);
    const all = await records(t);
    const erased = all.find((r) => r.eventId === 'g1') as VerifyRecord;
    expect(erased.userId).toBe('[erased by auditlake]');
    expect(JSON.stringify(erased)).not.toContain('carol');
    for (const guess of directory) expect(confirms(guess, erased), `guess ${guess}`).toBe(false);
    // Every other field still verifies, and so does the chain.
    expect(erased).toMatchObject({ resource: 'hr.people', query: 'SELECT salary FROM hr.people' });
    const verifier = new ChainVerifier({ startSeq: 1 });
    for (const record of all) verifier.add(record);
    expect(verifier.finish()).toMatchObject({ ok: true, message: expect.stringMatching(/; 1 field erased$/) as unknown });
    // A second erasure of the same record, later: the resource's salt was kept, so its hash is
    // computed and kept and the salt dropped; neither erased value can be confirmed, and it verifies.
    const again = await t.request('/admin/audit/erase', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventIds: ['g1'], fields: ['resource'] }) });
    expect(again.status).toBe(200);
    const after = await records(t);
    const twice = after.find((r) => r.eventId === 'g1') as VerifyRecord;
    expect(twice).toMatchObject({ userId: '[erased by auditlake]', resource: '[erased by auditlake]', query: 'SELECT salary FROM hr.people' });
    expect(twice.salt?.split('.').map((part) => part.length)).toEqual([0, 0, 16, 16, 16]);
    for (const guess of directory) expect(confirms(guess, twice), `guess ${guess}`).toBe(false);
    for (const guess of ['hr.people', 'hive.sales.orders']) expect(confirms(guess, twice), `guess ${guess}`).toBe(false);
    const second = new ChainVerifier({ startSeq: 1 });
    for (const record of after) second.add(record);
    expect(second.finish()).toMatchObject({ ok: true, message: expect.stringMatching(/; 2 fields erased$/) as unknown });
    // The salt is an integrity field: the search API does not return it.
    const found = (await t.search()).json.events;
    expect(found.length).toBeGreaterThan(0);
    for (const e of found) expect(e).not.toHaveProperty('salt');
  });
});
