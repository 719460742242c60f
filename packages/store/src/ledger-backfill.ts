import type { Level } from 'level';
import { localKey, PREFIX, prefixEnd } from './event-keys.js';
import type { SourceLedger } from './source-ledger.js';

/** Local-metadata name of the ledger layout this store's ledger is complete for. */
const LEDGER_VERSION_NAME = 'ledgerVersion';
const LEDGER_VERSION = '1';

/** Events read per batch while building the ledger of an existing store. */
const BACKFILL_BATCH_EVENTS = 10_000;

/**
 * Makes the completeness ledger complete for a store opened for the first time by a version that
 * keeps one: a log written before the ledger existed holds events with sourceSeqs the ledger
 * never saw, which it would report as holes. Reads every stored event once (in event-time order, in
 * batches), adding its sourceSeq (adding one twice changes nothing), then records the version, so
 * it runs once per store. Events retention deleted before this ran are not in the log, so their
 * sourceSeqs stay holes. Returns how many events it read.
 */
export async function backfillLedger(db: Level<string, string>, ledger: SourceLedger): Promise<number> {
  if ((await db.get(localKey(LEDGER_VERSION_NAME))) === LEDGER_VERSION) return 0;
  let read = 0;
  let from: string = PREFIX.time;
  for (;;) {
    const entries = await db.iterator({ gte: from, lt: prefixEnd(PREFIX.time), limit: BACKFILL_BATCH_EVENTS }).all();
    if (entries.length === 0) break;
    const change = ledger.begin();
    for (const [, json] of entries) change.addJson(json);
    const batch = db.batch();
    change.putChanged(batch);
    await batch.write({ sync: false });
    change.commit();
    read += entries.length;
    from = (entries[entries.length - 1] as [string, string])[0] + '\u0000';
  }
  // Synced, and only after every range: a crash before it means the backfill runs again (adding is idempotent).
  await db.put(localKey(LEDGER_VERSION_NAME), LEDGER_VERSION, { sync: true });
  return read;
}
