// Goal: the verifier — the product of the integrity work — passes every untouched history and
// names the first break of every kind of tampering, in words an operator can act on.
import { saltsOfKey } from '../src/record-salt.js';
import { describe, expect, it } from 'vitest';
import {
  ChainVerifier,
  checkpointEvent,
  checkpointHash,
  encodePublishedKey,
  encodeErasureDetails,
  eraseRecordFields,
  erasedText,
  ERASED_MARKER,
  fieldHash,
  GENESIS_CHAIN_HASH as GENESIS,
  INTEGRITY_ACTIONS,
  keyRegistrationEvent,
  publishKey,
  signCheckpoint,
  type ChainVerifierOptions,
  type ErasableField,
  type VerifyRecord,
  type VerifyReport,
} from '../src/index.js';
import { buildLog, chained, event, newKey } from './log-builder.js';
import { keyOf } from './log-edits.js';

function verify(records: readonly VerifyRecord[], options: ChainVerifierOptions = {}): VerifyReport {
  const verifier = new ChainVerifier({ startSeq: 1, ...options });
  for (const record of [...records].sort((a, b) => a.seq - b.seq)) verifier.add(record);
  return verifier.finish();
}

function events(n: number) {
  return Array.from({ length: n }, () => event());
}

/** Rebuilds the chain fields of records from `from` on, as a forger who rewrites the chain would. */
function rechain(records: VerifyRecord[], from: number): VerifyRecord[] {
  const out = records.slice(0, from);
  for (const record of records.slice(from)) {
    const { recordHash: _r, chainHash: _c, fieldCheck: _f, ...values } = record;
    out.push(chained(values, out[out.length - 1]?.chainHash as string));
  }
  return out;
}

describe('an untouched history', () => {
  it('verifies, with its counts in the message', () => {
    const log = buildLog(events(20), { checkpointEvery: 5 });
    const report = verify(log.records);
    expect(report.ok).toBe(true);
    expect(report.message).toBe(`verified ${log.records.length} records, seq 1..${log.records.length}, 5 checkpoints`);
    expect(report.keyIds).toEqual([log.key.keyId]);
  });

  it('verifies with its checkpoints also shown outside the records, and with identical copies', () => {
    const log = buildLog(events(8), { checkpointEvery: 4 });
    const copies = [...log.records, ...log.records.slice(2, 5)];
    const report = verify(copies, { checkpoints: log.checkpoints.map((checkpoint) => ({ checkpoint, where: '_integrity' })) });
    expect(report.message).toBe(`verified ${log.records.length} records, seq 1..${log.records.length}, 3 checkpoints; 3 identical copies ignored`);
  });

  it('verifies with more checkpoints shown outside the records than a call takes arguments (a year of one a minute)', () => {
    const log = buildLog(events(3));
    const shown = log.checkpoints.map((checkpoint) => ({ checkpoint, where: '_integrity' }));
    const report = verify(log.records, { checkpoints: Array.from({ length: 200_000 }, () => shown[0]!) });
    expect(report.ok).toBe(true);
    expect(report.message).toBe(`verified ${log.records.length} records, seq 1..${log.records.length}, 1 checkpoint`);
  });

  it('a record found twice in one copy of the history (a tier read alone) is a duplicated row, named once', () => {
    const log = buildLog(events(8), { checkpointEvery: 4 });
    const copies = [...log.records, ...log.records.slice(2, 5)];
    const report = verify(copies, { oneCopy: 'the tier at s3://b/t' });
    expect(report.ok).toBe(false);
    expect(report.breaks.filter((b) => b.kind === 'duplicated')).toHaveLength(1);
    expect(report.message).toBe(`duplicated record at seq 3 (eventId ${log.records[2]!.eventId}): the tier at s3://b/t holds it more than once, so an engine reading it counts the event twice`);
  });

  it('continues a chain over records removed by retention when the node declares them', () => {
    const log = buildLog(events(10));
    const kept = log.records.filter((r) => r.seq < 3 || r.seq > 6);
    const report = verify(kept, { pruned: [{ fromSeq: 3, toSeq: 6, chainHash: log.records[5]?.chainHash }] });
    expect(report.message).toMatch(/^verified 8 records, seq 1\.\.12, 1 checkpoint; 4 records removed by retention$/);
  });

  it('ends where the declared retention ranges after its last record end (a node whose newest records retention deleted)', () => {
    const log = buildLog(events(10), { checkpointEvery: 5 });
    const n = log.records.length;
    const where = 'node n1';
    const head = { seq: n, chainHash: log.records[n - 1]?.chainHash, where };
    const shownKeys = [{ text: encodePublishedKey(publishKey(log.key, 'node-1')), where }];
    const checkpoints = log.checkpoints.map((checkpoint) => ({ checkpoint, where }));
    // The newest records deleted, the older ones still held.
    const tail = verify(log.records.filter((r) => r.seq <= 6), { pruned: [{ fromSeq: 7, toSeq: n, chainHash: head.chainHash }], head, checkpoints, shownKeys });
    expect(tail.message).toBe(`verified 6 records, seq 1..6, 3 checkpoints; ${n - 6} records removed by retention`);
    expect(tail.ok).toBe(true);
    // Every record deleted, in two ranges; the node still shows its newest checkpoint.
    const none = verify([], { pruned: [{ fromSeq: 1, toSeq: 4, chainHash: log.records[3]?.chainHash }, { fromSeq: 5, toSeq: n, chainHash: head.chainHash }], head, checkpoints: checkpoints.slice(-1), shownKeys });
    expect(none.message).toBe(`verified 0 records, no records, 1 checkpoint; ${n} records removed by retention`);
    expect(none.ok).toBe(true);
  });

  it('takes a shown checkpoint whose record retention deleted as declared, also when records came between it and the seq it covers', () => {
    const key = newKey();
    const records: VerifyRecord[] = [];
    const push = (values: Parameters<typeof event>[0] & object) => {
      const seq = records.length + 1;
      records.push(chained({ ...event(), ...values, seq, term: 1, ingestTs: 1_700_000_000_000 + seq }, records.at(-1)?.chainHash ?? GENESIS));
    };
    push(keyRegistrationEvent(`key-${key.keyId}`, publishKey(key, 'node-1'), 1_700_000_000_000));
    push({});
    push({});
    const signed = signCheckpoint({ v: 1, chainId: 'chain-a', seq: 3, chainHash: records[2]?.chainHash as string, timeMs: 1, term: 1, keyId: key.keyId, nodeId: 'node-1', previousCheckpointHash: '' }, key.privateKey);
    // An event ordered after the head was read, then the checkpoint's record (seq 5), then another.
    push({});
    push(checkpointEvent('cp-3', signed));
    push({});
    const held = records.filter((r) => r.seq !== 5);
    const options = { pruned: [{ fromSeq: 5, toSeq: 5, chainHash: records[4]?.chainHash }], head: { seq: 6, chainHash: records[5]?.chainHash, where: 'node n1' } };
    const shown = { checkpoint: signed, where: 'node n1' };
    expect(verify(held, { ...options, checkpoints: [{ ...shown, recordSeq: 5 }] }).message).toBe('verified 5 records, seq 1..6, 1 checkpoint; 1 record removed by retention');
    // Its record not deleted but gone: still records removed.
    const undeclared = verify(held, { ...options, pruned: [], checkpoints: [{ ...shown, recordSeq: 5 }] });
    expect(undeclared.message).toBe('records removed: the checkpoint at seq 3 (node n1) has no checkpoint record in the history after seq 3');
    expect(undeclared.breaks.map((b) => b.message)).toContain('missing records: seq 5..5 (1 record)');
    // The same checkpoint shown in two places (a summary and an object, two packs) is one break.
    const twice = verify(held, { ...options, pruned: [], checkpoints: [{ ...shown, recordSeq: 5 }, { checkpoint: signed, where: 'a pack', recordSeq: 5 }] });
    expect(twice.breaks.filter((b) => b.message.startsWith('records removed')).map((b) => b.message)).toEqual(['records removed: the checkpoint at seq 3 (node n1) has no checkpoint record in the history after seq 3']);
    expect(verify(held.filter((r) => r.seq !== 6), { checkpoints: [{ ...shown, recordSeq: 5 }] }).message).toBe('records removed: the checkpoint at seq 3 (node n1) has no checkpoint record in the history after seq 3');
  });

  it('verifies history from a later start when its start is not claimed', () => {
    const log = buildLog(events(10));
    const report = new ChainVerifier({ shownKeys: [{ text: encodePublishedKey(publishKey(log.key, 'node-1')), where: 'a listing' }] });
    for (const record of log.records.slice(4)) report.add(record);
    expect(report.finish().ok).toBe(true);
  });

  it('counts records from before the chain existed and verifies the chain after them', () => {
    const log = buildLog(events(5), { final: false });
    const legacy = [1, 2, 3].map((seq) => ({ ...event(), seq, term: 0, ingestTs: seq }));
    const shifted = log.records.map((r) => ({ ...r, seq: r.seq + 3 }));
    const report = verify([...legacy, ...rechainFromGenesis(shifted)]);
    expect(report.message).toMatch(/3 earlier records predate the chain$/);
  });

  it('with --pre-chain-holes, takes seqs missing before the chain began (deleted by a version that declared nothing, or tiered without a seq) as not verifiable; without it, names them missing and says so', () => {
    const legacy = [1, 2, 3, 4, 5].map((seq) => ({ ...event(), seq, term: 0, ingestTs: seq }));
    const chain = rechainFromGenesis(buildLog(events(5), { final: false }).records.map((r) => ({ ...r, seq: r.seq + 7 })));
    // Seq 3 and seqs 6..7 are gone: retention of a version before the chain deleted them.
    const history = [...legacy.filter((r) => r.seq !== 3), ...chain];
    const upgraded = verify(history, { preChainHoles: true });
    expect(upgraded).toMatchObject({ ok: true, legacyRecords: 4, preChainAbsent: 3 });
    expect(upgraded.message).toMatch(/; 4 earlier records predate the chain; 3 seqs before the chain began not held \(deleted or tiered without a seq by a version before it\), not verifiable$/);
    expect(verify(history).message).toBe(
      'missing records: seq 3..3 (1 record): they come before the record chain began; if this history was upgraded from a version without the chain, whose retention deleted records without declaring them, --pre-chain-holes counts such seqs as not verifiable',
    );
    // Offline from a tier whose rows before the chain carry no seq: its first row with one starts the chain.
    const verifier = new ChainVerifier({ startSeq: 1, preChainHoles: true });
    for (const record of chain) verifier.add(record);
    verifier.addRowsWithoutSeq(7);
    expect(verifier.finish()).toMatchObject({ ok: true, preChainAbsent: 7, rowsWithoutSeq: 7 });
  });

  it('names the first chained records cut from a history whose chain was later switched off and on again as missing by default (they look like history from before the chain)', () => {
    const first = buildLog(events(4), { final: false }).records;
    const n = first.length;
    const off = [n + 1, n + 2, n + 3].map((seq) => ({ ...event(), seq, term: 1, ingestTs: seq }));
    const again = rechainFromGenesis(buildLog(events(3), { final: false }).records.map((r) => ({ ...r, seq: r.seq + n + 3 })));
    // The honest history already fails where the chain fields stop.
    expect(verify([...first, ...off, ...again]).message).toMatch(new RegExp(`^altered record at seq ${n + 1} .*its chain fields were removed$`));
    // Cut its first chained records: by default still a break.
    const cut = [...off, ...again];
    expect(verify(cut).message).toMatch(new RegExp(`^missing records: seq 1\\.\\.${n} \\(${n} records\\): they come before the record chain began`));
    expect(verify(cut).ok).toBe(false);
  });

  it('still names records missing where the chain had begun: its first record removed, a cut inside it, or a chained history cut at its start', () => {
    const legacy = [1, 2, 3].map((seq) => ({ ...event(), seq, term: 0, ingestTs: seq }));
    const chain = rechainFromGenesis(buildLog(events(6), { final: false }).records.map((r) => ({ ...r, seq: r.seq + 3 })));
    expect(verify([...legacy, ...chain.filter((r) => r.seq !== 4)]).message).toBe('missing records: seq 4..4 (1 record)');
    expect(verify([...legacy, ...chain.filter((r) => r.seq !== 6 && r.seq !== 7)]).message).toBe('missing records: seq 6..7 (2 records)');
    const whole = buildLog(events(10)).records;
    expect(verify(whole.filter((r) => r.seq > 3)).message).toBe('missing records: seq 1..3 (3 records)');
  });
});

function rechainFromGenesis(records: VerifyRecord[]): VerifyRecord[] {
  const out: VerifyRecord[] = [];
  for (const record of records) {
    const { recordHash: _r, chainHash: _c, fieldCheck: _f, ...values } = record;
    out.push(chained(values, out[out.length - 1]?.chainHash ?? GENESIS));
  }
  return out;
}

describe('tampering', () => {
  const log = buildLog(events(30), { checkpointEvery: 10 });
  const at = (seq: number) => log.records.find((r) => r.seq === seq) as VerifyRecord;
  const replace = (seq: number, change: Partial<VerifyRecord>) => log.records.map((r) => (r.seq === seq ? { ...r, ...change } : r));

  it.each([
    ['query', { query: 'SELECT * FROM hive.sales.orderz' }],
    ['userId', { userId: 'mallory' }],
    ['source', { source: 'spark' }],
    ['action', { action: 'data:Drop' }],
    ['resource', { resource: 'hive.sales.other' }],
    ['decision', { decision: 'DENY' }],
    ['tables', { tables: ['hive.sales.orders', 'x'] }],
    ['details', { details: 'edited' }],
    ['eventId', { eventId: 'forged-id' }],
    ['timestamp', { timestamp: 1 }],
    ['ingestTs', { ingestTs: 2 }],
    ['term', { term: 9 }],
    ['sourceId', { sourceId: 'src-x' }],
    ['sourceSeq', { sourceSeq: 7 }],
  ] as const)('a changed %s is an altered record naming that field', (field, change) => {
    const report = verify(replace(12, change));
    expect(report.ok).toBe(false);
    expect(report.breaks[0]).toMatchObject({ kind: 'altered', seq: 12, fields: [field] });
    expect(report.message).toBe(`altered record at seq 12 (eventId ${(change as { eventId?: string }).eventId ?? at(12).eventId}): field ${field} changed`);
  });

  it('a changed stored record_hash, chain_hash or field_check is caught', () => {
    expect(verify(replace(7, { recordHash: 'f'.repeat(64) })).message).toBe(`altered record at seq 7 (eventId ${at(7).eventId}): its record_hash was changed`);
    expect(verify(replace(7, { chainHash: 'f'.repeat(64) })).message).toBe(`altered record at seq 7 (eventId ${at(7).eventId}): its chain_hash was changed`);
    expect(verify(replace(7, { fieldCheck: '0'.repeat(56) })).message).toBe(`altered record at seq 7 (eventId ${at(7).eventId}): its field_check was changed`);
    expect(verify(replace(7, { recordHash: undefined, chainHash: undefined, fieldCheck: undefined })).message).toBe(`altered record at seq 7 (eventId ${at(7).eventId}): its chain fields were removed`);
  });

  it('a removed row is missing records, as a seq range', () => {
    expect(verify(log.records.filter((r) => r.seq !== 9)).message).toBe('missing records: seq 9..9 (1 record)');
    expect(verify(log.records.filter((r) => r.seq < 15 || r.seq > 21)).message).toBe('missing records: seq 15..21 (7 records)');
    expect(verify(log.records.filter((r) => r.seq !== 1)).message).toBe('missing records: seq 1..1 (1 record)');
  });

  it('of checkpoint records that claim the same seq past the end, names the first in the history, whichever also has a digest object', () => {
    // A forger's: two checkpoint records (seq 3 and 4) covering seq 5, the later also shown as an
    // object. The record that takes over its object's entry keeps its place in the history
    // (a differential test against the previous verifier found the words naming seq 4).
    const key = newKey();
    const records = buildLog([event()], { key, final: false }).records;
    const claim = (timeMs: number) =>
      signCheckpoint({ v: 1, chainId: 'chain-a', seq: 5, chainHash: 'a'.repeat(64), timeMs, term: 1, keyId: key.keyId, nodeId: 'node-1', previousCheckpointHash: '' }, key.privateKey);
    const [a, b] = [claim(1), claim(2)];
    for (const signed of [a, b]) {
      const previous = records[records.length - 1]!;
      records.push(chained({ ...checkpointEvent(`cp-${signed.timeMs}`, signed), seq: previous.seq + 1, term: 1, ingestTs: previous.ingestTs + 1 }, previous.chainHash as string));
    }
    const tail = (report: VerifyReport) => report.breaks.find((found) => found.kind === 'truncated')?.message;
    const expected = 'truncated tail: the history ends at seq 4, but the checkpoint in the checkpoint record at seq 3 covers records up to seq 5 (1 missing)';
    expect(tail(verify(records))).toBe(expected);
    expect(tail(verify(records, { checkpoints: [{ checkpoint: b, where: 'digest b' }] }))).toBe(expected);
    expect(tail(verify(records, { checkpoints: [{ checkpoint: b, where: 'digest b' }, { checkpoint: a, where: 'digest a' }] }))).toBe(expected);
  });

  it('a truncated tail is caught by a checkpoint shown outside the records', () => {
    const digests = log.checkpoints.map((checkpoint) => ({ checkpoint, where: `_integrity/checkpoints/${checkpoint.seq}.json` }));
    const last = log.checkpoints[log.checkpoints.length - 1]!;
    const report = verify(log.records.filter((r) => r.seq <= 25), { checkpoints: digests });
    expect(report.breaks.some((b) => b.kind === 'truncated')).toBe(true);
    expect(report.message).toBe(`truncated tail: the history ends at seq 25, but the checkpoint in _integrity/checkpoints/${last.seq}.json covers records up to seq ${last.seq} (${last.seq - 25} missing)`);
    // Only the last record (the final checkpoint's own record) removed:
    const lastRecord = log.records.length;
    expect(verify(log.records.slice(0, -1), { checkpoints: digests }).message).toBe(
      `records removed: the checkpoint at seq ${lastRecord - 1} (_integrity/checkpoints/${lastRecord - 1}.json) has no checkpoint record in the history after seq ${lastRecord - 1}`,
    );
    // …and by a node whose log goes further.
    expect(verify(log.records.slice(0, 20), { head: { seq: lastRecord, chainHash: undefined, where: 'the node' } }).message).toBe(`truncated tail: the history ends at seq 20, but the node ends at seq ${lastRecord} (${lastRecord - 20} missing)`);
  });

  it('a truncated tail is caught past the declared retention ranges that follow the last record', () => {
    const lastRecord = log.records.length;
    const head = { seq: lastRecord, chainHash: log.records[lastRecord - 1]?.chainHash, where: 'the node' };
    const held = log.records.filter((r) => r.seq <= 20);
    // The node's log goes further than what it declares deleted…
    expect(verify(held, { head, pruned: [{ fromSeq: 21, toSeq: 25, chainHash: at(25).chainHash }] }).message).toBe(`truncated tail: the history ends at seq 25, but the node ends at seq ${lastRecord} (${lastRecord - 25} missing)`);
    // …a declared range after a hole does not carry the history across the hole…
    expect(verify(held, { head, pruned: [{ fromSeq: 23, toSeq: lastRecord, chainHash: head.chainHash }] }).message).toBe(`truncated tail: the history ends at seq 20, but the node ends at seq ${lastRecord} (${lastRecord - 20} missing)`);
    // …a checkpoint covers records past the declared range…
    const digests = log.checkpoints.map((checkpoint) => ({ checkpoint, where: `_integrity/checkpoints/${checkpoint.seq}.json` }));
    const last = log.checkpoints[log.checkpoints.length - 1]!;
    expect(verify(held, { checkpoints: digests, pruned: [{ fromSeq: 21, toSeq: 25, chainHash: at(25).chainHash }] }).message).toBe(
      `truncated tail: the history ends at seq 25, but the checkpoint in _integrity/checkpoints/${last.seq}.json covers records up to seq ${last.seq} (${last.seq - 25} missing)`,
    );
    // …and a declared range that ends with another chain hash than the node's end is a break.
    expect(verify(held, { head, pruned: [{ fromSeq: 21, toSeq: lastRecord, chainHash: 'f'.repeat(64) }] }).message).toBe(`chain broken at seq ${lastRecord}: the node ends with another chain_hash`);
  });

  it('two records swapped (their seqs exchanged) are reordered', () => {
    const swapped = log.records.map((r) => (r.seq === 5 ? { ...r, seq: 6 } : r.seq === 6 ? { ...r, seq: 5 } : r));
    expect(verify(swapped).message).toBe(`reordered: the record at seq 5 (eventId ${at(6).eventId}) was chained at seq 6`);
    // The contents swapped while the hash columns stay in place:
    const contents = log.records.map((r) => (r.seq === 5 ? { ...at(6), seq: 5, recordHash: r.recordHash, chainHash: r.chainHash, fieldCheck: r.fieldCheck } : r.seq === 6 ? { ...at(5), seq: 6, recordHash: r.recordHash, chainHash: r.chainHash, fieldCheck: r.fieldCheck } : r));
    expect(verify(contents).message).toBe(`reordered: the record at seq 5 (eventId ${at(6).eventId}) was chained at seq 6`);
  });

  it('a rewritten chain (every hash recomputed after an edit) contradicts the signed checkpoint', () => {
    const edited = rechain(replace(12, { query: 'forged' }), 11);
    const cp = log.checkpoints.find((c) => c.seq > 12)!;
    expect(verify(edited).message).toBe(`checkpoint at seq ${cp.seq} (the checkpoint record at seq ${cp.seq + 1}) does not match the chain: it signs chain_hash ${cp.chainHash.slice(0, 12)}…, the record at seq ${cp.seq} has ${edited[cp.seq - 1]!.chainHash!.slice(0, 12)}…`);
  });

  it('a forged checkpoint (not signed by its key) is a bad signature', () => {
    const real = log.checkpoints[1]!;
    const forged = { ...real, chainHash: 'e'.repeat(64) };
    expect(verify(log.records, { checkpoints: [{ checkpoint: forged, where: 'a digest' }] }).message).toBe(`bad signature on the checkpoint at seq ${real.seq} (a digest, keyId ${real.keyId}): forged or altered`);
  });

  it('a checkpoint signed by an unknown key is refused', () => {
    const mallory = newKey();
    const real = log.checkpoints[1]!;
    const foreign = signCheckpoint({ ...real, keyId: mallory.keyId }, mallory.privateKey);
    expect(verify(log.records, { checkpoints: [{ checkpoint: foreign, where: 'a digest' }] }).message).toBe(
      `checkpoint at seq ${real.seq} (a digest) is signed by unknown key ${mallory.keyId} (neither registered in the chain nor published)`,
    );
    // With pinned keys, even a key registered in the chain is unknown unless pinned.
    expect(verify(log.records, { pinnedKeys: [mallory.publicKey] }).message).toMatch(new RegExp(`is signed by unknown key ${log.key.keyId} \\(not among the --public-key files\\)$`));
    expect(verify(log.records, { pinnedKeys: [log.key.publicKey] }).ok).toBe(true);
  });

  it('a replaced public key is named', () => {
    const replaced = encodePublishedKey({ ...publishKey(log.key, 'node-1'), publicKey: newKey().publicKeyPem });
    const report = verify(log.records, { shownKeys: [{ text: replaced, where: `_integrity/keys/${log.key.keyId}.json` }] });
    expect(report.message).toMatch(new RegExp(`^replaced public key: the key in _integrity/keys/${log.key.keyId}\\.json for keyId ${log.key.keyId} has fingerprint [0-9a-f]{16}$`));
  });

  it('a chain spliced from another cluster breaks where it starts', () => {
    const other = buildLog(events(30), { checkpointEvery: 10, chainId: 'chain-b' });
    const spliced = [...log.records.filter((r) => r.seq <= 14), ...other.records.filter((r) => r.seq > 14)];
    const report = verify(spliced);
    expect(report.message).toBe(`chain broken at seq 15 (eventId ${other.records[14]!.eventId}): its chain_hash does not follow from seq 14 (records were replaced, or spliced from another chain)`);
    expect(report.breaks.some((b) => b.kind === 'foreign-chain' || b.kind === 'unknown-key')).toBe(true);
  });

  it('two different records at one seq conflict', () => {
    const other = { ...at(4), query: 'x' };
    expect(verify([...log.records, other]).message).toBe(`two different records at seq 4 (eventIds ${at(4).eventId} and ${at(4).eventId})`);
  });

  it('a removed checkpoint record breaks the checkpoints chain too (besides the missing seq)', () => {
    const cpRecordSeq = log.records.find((r) => r.action === INTEGRITY_ACTIONS.checkpoint)!.seq;
    const report = verify(log.records.filter((r) => r.seq !== cpRecordSeq));
    expect(report.breaks.map((b) => b.kind)).toEqual(expect.arrayContaining(['missing', 'checkpoint-chain']));
  });
});

describe('attacks by whoever holds the bucket', () => {
  const isCheckpointRecord = (r: VerifyRecord) => r.source === 'auditlake' && r.action === INTEGRITY_ACTIONS.checkpoint;

  it('records disguised as predating the chain, followed by the genuine checkpoint records re-chained, contradict the checkpoints', () => {
    const log = buildLog(events(20), { checkpointEvery: 10 });
    // Every record up to the last checkpoint loses its chain fields (and may then say anything);
    // the genuine signed checkpoint records are chained again from genesis after them.
    const cut = Math.max(...log.checkpoints.map((c) => c.seq));
    const disguised = log.records
      .filter((r) => r.seq <= cut)
      .map(({ recordHash: _r, chainHash: _c, fieldCheck: _f, ...values }) => (values.seq === 5 ? { ...values, userId: 'mallory' } : values));
    const copies = log.records.filter(isCheckpointRecord).map((r, i) => ({ ...r, seq: cut + 1 + i }));
    const forged = [...disguised, ...rechainFromGenesis(copies)];
    const report = verify(forged, { pinnedKeys: [log.key.publicKey] });
    expect(report.ok).toBe(false);
    // The key registration and checkpoint records among the disguised ones are named first:
    // only a chained leader writes them, so without chain fields they were stripped.
    expect(report.breaks[0]).toMatchObject({ kind: 'altered', seq: 1, fields: ['record_hash', 'chain_hash'] });
    expect(report.message).toMatch(/^altered record at seq 1 \(eventId [^)]+\): its chain fields were removed \(integrity:RegisterKey records are always chained\)$/);
    expect(report.breaks.find((b) => b.kind === 'checkpoint-mismatch')?.message).toMatch(/covers no chained record in the history: the record at seq \d+ has no chain fields/);
  });

  it('a history stripped of every chain field, its checkpoint objects gone, fails under a pinned key: its integrity records were chained, and nothing is signed', () => {
    const log = buildLog(events(12), { checkpointEvery: 5 });
    const stripped = log.records.map(({ recordHash: _r, chainHash: _c, fieldCheck: _f, ...values }) => (values.seq === 4 ? { ...values, userId: 'mallory' } : values));
    const report = verify(stripped, { pinnedKeys: [log.key.publicKey] });
    expect(report.ok).toBe(false);
    const checkpointSeqs = log.records.filter(isCheckpointRecord).map((r) => r.seq);
    expect(checkpointSeqs.length).toBeGreaterThan(0);
    for (const seq of [1, ...checkpointSeqs]) expect(report.breaks.some((b) => b.kind === 'altered' && b.seq === seq)).toBe(true);
    // Without any integrity record among them (rows of ordinary events only), the pinned key still finds nothing signed.
    const plain = stripped.filter((r) => r.source !== 'auditlake');
    const unsigned = verify(plain, { pinnedKeys: [log.key.publicKey] });
    expect(unsigned.breaks.map((b) => b.kind)).toContain('unsigned');
    expect(unsigned.breaks.find((b) => b.kind === 'unsigned')?.message).toBe(`no checkpoint signed by a --public-key key covers this history: nothing proves who wrote its ${plain.length} records (checkpoints removed, or not yet made; ${plain.length} of them without chain fields)`);
  });

  it('a history with no checkpoint at all fails when keys are pinned', () => {
    const log = buildLog(events(6), { final: false });
    expect(verify(log.records).ok).toBe(true);
    const report = verify(log.records, { pinnedKeys: [log.key.publicKey] });
    expect(report.breaks[0]).toMatchObject({ kind: 'unsigned' });
    expect(report.message).toBe(`no checkpoint signed by a --public-key key covers this history: nothing proves who wrote its ${log.records.length} records (checkpoints removed, or not yet made)`);
  });

  it("a second copy of a record whose stored record_hash or field_check was changed is caught (its values hash the same; the copy's stored hashes must too)", () => {
    const log = buildLog(events(8));
    const target = log.records[3]!;
    const withCopy = (copy: VerifyRecord) => verify([...log.records.slice(0, 4), copy, ...log.records.slice(4)]);
    expect(withCopy({ ...target }).ok).toBe(true);
    expect(withCopy({ ...target, recordHash: '0'.repeat(64) })).toMatchObject({ ok: false, breaks: [{ kind: 'altered', seq: target.seq, fields: ['record_hash'] }] });
    expect(withCopy({ ...target, fieldCheck: 'f'.repeat(56) }).message).toBe(`altered record at seq ${target.seq} (eventId ${target.eventId}): a copy's stored field_check differs from the record's`);
  });

  it('a second copy of a record that hides a changed value behind an erasure mark is caught', () => {
    const log = buildLog(events(10));
    const target = log.records[4]!;
    const mark = { query: fieldHash(target.query) };
    const withValue = verify([...log.records, { ...target, query: 'SELECT 1 -- forged', erased: mark }]);
    expect(withValue.message).toBe(`altered record at seq ${target.seq} (eventId ${target.eventId}): erased field query holds a value`);
    const withMarker = verify([...log.records, { ...target, query: ERASED_MARKER, erased: mark }]);
    expect(withMarker.message).toBe(`altered record at seq ${target.seq} (eventId ${target.eventId}): field query erased without an erasure record`);
  });

  it('a history of nothing is no verdict: nothing to verify (a wrong path, or a bucket emptied whole)', () => {
    const report = verify([]);
    expect(report.ok).toBe(false);
    expect(report.breaks[0]?.kind).toBe('empty');
    expect(report.message).toBe('nothing to verify: no records and no checkpoints were found (a wrong path, table or node, or a history removed whole)');
  });

  it('names the tier rows it could not verify for want of a seq', () => {
    const log = buildLog(events(4));
    const verifier = new ChainVerifier({ startSeq: 1 });
    for (const record of log.records) verifier.add(record);
    verifier.addRowsWithoutSeq(3);
    const report = verifier.finish();
    expect(report.ok).toBe(true);
    expect(report.rowsWithoutSeq).toBe(3);
    expect(report.message).toMatch(/; 3 tier rows without a seq not verifiable \(written before the chain, or added\)$/);
  });

  it('rows without a seq are history from before the chain only when ingested before the tier\'s first chained row, in a tier that does not start at seq 1', () => {
    const log = buildLog(events(4));
    // What the tier's files showed: its first chained row is seq 3 (the ones before were tiered without the column).
    const first = { seq: 3, ingestTs: log.records[2]!.ingestTs };
    const run = (records: readonly VerifyRecord[], seen: Parameters<ChainVerifier['addRowsWithoutSeq']>[1]) => {
      const verifier = new ChainVerifier({ startSeq: 1 });
      for (const record of records) verifier.add(record);
      verifier.addRowsWithoutSeq(2, seen);
      return verifier.finish();
    };
    // Ingested before the tier's first chained row (seq 3): from before the chain, counted.
    const before = run(log.records, { firstRow: first, withoutSeq: { ingestTsMax: first.ingestTs - 1, eventId: 'old-1' } });
    expect(before).toMatchObject({ ok: true, rowsWithoutSeq: 2 });
    // Ingested with or after it: added.
    const after = run(log.records, { firstRow: first, withoutSeq: { ingestTsMax: first.ingestTs, eventId: 'new-1' } });
    expect(after.breaks[0]?.kind).toBe('added');
    expect(after.message).toBe(`rows added to the tier: 2 tier rows without a seq (eventId new-1), ingested at ${first.ingestTs}, not before the tier's first row with a seq (seq 3, ingested at ${first.ingestTs}), so not from before the chain`);
    // A tier whose rows start at seq 1 never lacked the column, whenever they say they came.
    const fromOne = run(log.records, { firstRow: { seq: 1, ingestTs: log.records[0]!.ingestTs }, withoutSeq: { ingestTsMax: 0, eventId: 'old-1' } });
    expect(fromOne.message).toBe('rows added to the tier: 2 tier rows without a seq (eventId old-1), in a tier whose rows start at seq 1, so none of them predates the seq column');
  });
});

describe('erasure', () => {
  const build = () => buildLog(events(10));

  function erase(records: VerifyRecord[], seq: number, field: 'query' | 'userId' | 'tables'): VerifyRecord[] {
    return records.map((r) => {
      if (r.seq !== seq) return r;
      const text = field === 'tables' ? r.tables.join(',') : r[field];
      return { ...r, [field]: field === 'tables' ? [ERASED_MARKER] : ERASED_MARKER, erased: { ...r.erased, [field]: fieldHash(text) } };
    });
  }

  function withErasureRecord(records: VerifyRecord[], refs: Array<{ eventId: string; seq: number }>, fields: Array<'query' | 'userId' | 'tables'>): VerifyRecord[] {
    const last = records[records.length - 1]!;
    const values = { ...event({ source: 'auditlake', action: INTEGRITY_ACTIONS.erase, details: encodeErasureDetails({ v: 1, fields, records: refs }) }), seq: last.seq + 1, term: 1, ingestTs: last.ingestTs + 1 };
    return [...records, chained(values, last.chainHash as string)];
  }

  it('keeps the proof: an erased field verifies by its kept hash and is counted', () => {
    const log = build();
    const target = log.records[4]!;
    const erased = withErasureRecord(erase(erase(log.records, target.seq, 'query'), target.seq, 'tables'), [{ eventId: target.eventId, seq: target.seq }], ['query', 'tables']);
    const report = verify(erased);
    expect(report.ok).toBe(true);
    expect(report.message).toMatch(/; 2 fields erased$/);
    expect(erasedText('tables')).toBe(ERASED_MARKER);
  });

  it('an erasure without an erasure record is an alteration', () => {
    const log = build();
    const target = log.records[4]!;
    expect(verify(erase(log.records, target.seq, 'userId')).message).toBe(`altered record at seq ${target.seq} (eventId ${target.eventId}): field userId erased without an erasure record`);
    const other = withErasureRecord(erase(log.records, target.seq, 'userId'), [{ eventId: target.eventId, seq: target.seq }], ['query']);
    expect(verify(other).message).toBe(`altered record at seq ${target.seq} (eventId ${target.eventId}): field userId erased without an erasure record`);
  });

  it('a copy stored again after an erasure (a re-send of the erased copy) and erased by a later erasure record verifies; erased by none after it, it is an alteration', () => {
    const log = build();
    const target = log.records[4]!;
    const first = withErasureRecord(erase(log.records, target.seq, 'query'), [{ eventId: target.eventId, seq: target.seq }], ['query', 'userId']);
    // The erased copy, as the API shows it, sent again: stored at a new seq with the marker as its query.
    const last = first[first.length - 1]!;
    const { recordHash: _r, chainHash: _c, fieldCheck: _f, erased: _e, ...values } = { ...target, query: ERASED_MARKER, seq: last.seq + 1, ingestTs: last.ingestTs + 1 };
    const copy = chained(values, last.chainHash as string);
    const withCopy = [...first, copy];
    expect(verify(withCopy).ok).toBe(true);
    const erasedAgain = withErasureRecord(erase(withCopy, copy.seq, 'userId'), [{ eventId: target.eventId, seq: copy.seq }], ['userId']);
    const report = verify(erasedAgain);
    expect(report.ok).toBe(true);
    expect(report.message).toMatch(/; 2 fields erased$/);
    // The first erasure named userId too, but before the copy existed: it does not cover it.
    expect(verify(erase(withCopy, copy.seq, 'userId')).message).toBe(`altered record at seq ${copy.seq} (eventId ${target.eventId}): field userId erased without an erasure record`);
  });

  it('an erasure covers the copies it names by seq: another copy of the same eventId blanked by hand is an alteration', () => {
    const log = build();
    const target = log.records[4]!;
    // A second copy of the eventId (stored again after retention), erased by nobody.
    const last = log.records[log.records.length - 1]!;
    const { recordHash: _r, chainHash: _c, fieldCheck: _f, ...values } = { ...target, seq: last.seq + 1, ingestTs: last.ingestTs + 1 };
    const withCopy = [...log.records, chained(values, last.chainHash as string)];
    const copySeq = last.seq + 1;
    // The erasure names the first copy only: both erased by hand, the second is unauthorised.
    const legit = withErasureRecord(erase(withCopy, target.seq, 'userId'), [{ eventId: target.eventId, seq: target.seq }], ['userId']);
    expect(verify(legit).ok).toBe(true);
    const forged = erase(legit, copySeq, 'userId');
    expect(verify(forged).message).toBe(`altered record at seq ${copySeq} (eventId ${target.eventId}): field userId erased without an erasure record`);
    // Named too, both verify.
    const both = withErasureRecord(erase(erase(withCopy, target.seq, 'userId'), copySeq, 'userId'), [{ eventId: target.eventId, seq: target.seq }, { eventId: target.eventId, seq: copySeq }], ['userId']);
    expect(verify(both).message).toMatch(/; 2 fields erased$/);
  });

  it('a value put back into an erased field is an alteration', () => {
    const log = build();
    const target = log.records[4]!;
    const erased = withErasureRecord(erase(log.records, target.seq, 'query'), [{ eventId: target.eventId, seq: target.seq }], ['query']);
    const putBack = erased.map((r) => (r.seq === target.seq ? { ...r, query: 'SELECT 1' } : r));
    expect(verify(putBack).message).toBe(`altered record at seq ${target.seq} (eventId ${target.eventId}): erased field query holds a value`);
  });
});

describe('salted records (content format v3)', () => {
  // Every record salted, as a node writes them since v3, then one erased with its erasure record.
  const build = () => buildLog(Array.from({ length: 10 }, (_, i) => event({ salt: keyOf(i + 1), details: `d${i}` })));

  function eraseSalted(records: VerifyRecord[], seq: number, fields: ErasableField[]): VerifyRecord[] {
    const erased = records.map((r) => (r.seq === seq ? (eraseRecordFields(r, fields) as VerifyRecord) : r));
    const last = erased[erased.length - 1]!;
    const target = erased.find((r) => r.seq === seq)!;
    const values = { ...event({ source: 'auditlake', action: INTEGRITY_ACTIONS.erase, details: encodeErasureDetails({ v: 1, fields, records: [{ eventId: target.eventId, seq }] }) }), seq: last.seq + 1, term: 1, ingestTs: last.ingestTs + 1 };
    return [...erased, chained(values, last.chainHash as string)];
  }

  const replaceAt = (records: VerifyRecord[], seq: number, change: Partial<VerifyRecord>) => records.map((r) => (r.seq === seq ? { ...r, ...change } : r));

  it('verifies, and verifies again with fields erased one erasure after another', () => {
    const log = build();
    expect(verify(log.records).ok).toBe(true);
    const once = eraseSalted(log.records, 4, ['userId']);
    expect(verify(once)).toMatchObject({ ok: true, message: expect.stringMatching(/; 1 field erased$/) as unknown });
    const twice = eraseSalted(once, 4, ['query', 'tables']);
    expect(verify(twice)).toMatchObject({ ok: true, message: expect.stringMatching(/; 3 fields erased$/) as unknown });
    expect(twice.find((r) => r.seq === 4)?.salt).toMatch(/^\.[A-Za-z0-9_-]{16}\.\.\.[A-Za-z0-9_-]{16}$/);
  });

  it.each([
    ['userId', { userId: 'alicf' }],
    ['resource', { resource: 'hive.sales.orderz' }],
    ['tables', { tables: ['hive.sales.orders', 'x'] }],
    ['query', { query: 'SELECT * FROM hive.sales.orders WHERE id = 0' }],
    ['details', { details: 'd3 ' }],
  ] as const)('a byte changed in the salted field %s is an altered record naming it', (field, change) => {
    const log = build();
    expect(verify(replaceAt(log.records, 3, change))).toMatchObject({ ok: false, breaks: [{ kind: 'altered', seq: 3, fields: [field] }] });
  });

  it('a changed, added or removed salt is an altered record naming the salt', () => {
    const log = build();
    const seq = 3;
    const record = log.records.find((r) => r.seq === seq)!;
    const eventId = record.eventId;
    const flipped = `${record.salt![0] === 'A' ? 'B' : 'A'}${record.salt!.slice(1)}`;
    expect(verify(replaceAt(log.records, seq, { salt: flipped })).message).toBe(`altered record at seq ${seq} (eventId ${eventId}): field salt changed`);
    expect(verify(replaceAt(log.records, seq, { salt: 'not a salt' })).message).toBe(`altered record at seq ${seq} (eventId ${eventId}): field salt changed`);
    expect(verify(replaceAt(log.records, seq, { salt: undefined })).message).toBe(`altered record at seq ${seq} (eventId ${eventId}): field salt changed`);
    const v2 = buildLog(events(5));
    const plain = v2.records.find((r) => r.seq === seq)!;
    expect(verify(replaceAt(v2.records, seq, { salt: keyOf(9) })).message).toBe(`altered record at seq ${seq} (eventId ${plain.eventId}): field salt changed`);
    // The key replaced by the five salts it derives: the same hashes, but a form only an erasure
    // leaves (with the erased fields' salts dropped), so an edit like any other.
    const derived = (saltsOfKey(record.salt!) as string[]).join('.');
    expect(verify(replaceAt(log.records, seq, { salt: derived })).message).toBe(`altered record at seq ${seq} (eventId ${eventId}): field salt changed`);
  });

  it('on an erased record: a kept salt changed, a salt kept for the erased field, or the key put back, is an altered record', () => {
    const erased = eraseSalted(build().records, 4, ['userId', 'details']);
    const record = erased.find((r) => r.seq === 4)!;
    const parts = record.salt!.split('.');
    expect(parts[0]).toBe('');
    expect(parts[4]).toBe('');
    const at = (salt: string) => verify(replaceAt(erased, 4, { salt }));
    const flippedResource = [parts[0], `${parts[1]![0] === 'A' ? 'B' : 'A'}${parts[1]!.slice(1)}`, parts[2], parts[3], parts[4]].join('.');
    expect(at(flippedResource)).toMatchObject({ ok: false, breaks: [{ kind: 'altered', seq: 4, fields: ['resource'] }] });
    // A salt for an erased field would confirm a guess of its value: not a state erasure leaves.
    expect(at([parts[1], ...parts.slice(1)].join('.'))).toMatchObject({ ok: false, breaks: [{ kind: 'altered', seq: 4, fields: ['salt'] }] });
    expect(at(keyOf(5))).toMatchObject({ ok: false, breaks: [{ kind: 'altered', seq: 4, fields: ['salt'] }] });
    // The erased value put back, or its kept hash changed.
    expect(verify(replaceAt(erased, 4, { userId: 'alice' })).message).toBe(`altered record at seq 4 (eventId ${record.eventId}): erased field userId holds a value`);
    expect(verify(replaceAt(erased, 4, { erased: { ...record.erased, userId: 'f'.repeat(64) } })).ok).toBe(false);
  });
});

describe('checkpoints across a failover', () => {
  it('verify when a second leader continues the chain under its own key', () => {
    const first = buildLog(events(6));
    const key2 = newKey();
    const records = [...first.records];
    const append = (values: ReturnType<typeof event>, term: number) => {
      const last = records[records.length - 1]!;
      records.push(chained({ ...values, seq: last.seq + 1, term, ingestTs: last.ingestTs + 1 }, last.chainHash as string));
    };
    const { keyRegistrationEvent } = { keyRegistrationEvent: (k: typeof key2) => event({ source: 'auditlake', action: INTEGRITY_ACTIONS.registerKey, details: encodePublishedKey(publishKey(k, 'node-2')) }) };
    append(keyRegistrationEvent(key2), 2);
    append(event(), 2);
    const last = records[records.length - 1]!;
    const signed = signCheckpoint(
      { v: 1, chainId: 'chain-a', seq: last.seq, chainHash: last.chainHash as string, timeMs: 1, term: 2, keyId: key2.keyId, nodeId: 'node-2', previousCheckpointHash: checkpointHash(first.checkpoints[0]!) },
      key2.privateKey,
    );
    append(checkpointEvent('cp2', signed), 2);
    const report = verify(records);
    expect(report.message).toBe(`verified ${records.length} records, seq 1..${records.length}, 2 checkpoints`);
    expect(report.keyIds).toEqual([first.key.keyId, key2.keyId].sort());
  });
});
