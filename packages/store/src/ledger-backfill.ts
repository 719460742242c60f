import type { Level } from 'level';
import { decodeUint, localKey, PREFIX, prefixEnd } from './event-keys.js';
import type { DayLedger } from './day-ledger.js';
import type { SourceLedger } from './source-ledger.js';

/**
 * Local-metadata name of the ledger layout this store's ledger is complete for: 1 the
 * sourceSeq ranges, 2 also the received counts per day and source.
 */
const LEDGER_VERSION_NAME = 'ledgerVersion';
const LEDGER_VERSION = '2';

/** Events read per batch while building the ledger of an existing store. */
const BACKFILL_BATCH_EVENTS = 10_000;

/**
 * Makes the completeness ledger complete for a store opened for the first time by a version that
 * keeps it: a log written before the ledger existed holds events with sourceSeqs the ledger
 * never saw, which it would report as holes, and events its day counts never counted. Reads
 * every stored event once (in event-time order, in batches), adding its sourceSeq (adding one
 * twice changes nothing) and counting it as received. The counts are written in one batch with
 * the version, so a crash midway counts nothing twice: the backfill runs again from the start,
 * once per store. Events retention deleted before this ran are not in the log: their
 * sourceSeqs stay holes and no day counts them. Tiered counts follow from the first
 * countTieredThrough. Returns how many events it read.
 */
export async function backfillLedger(db: Level<string, string>, ledger: SourceLedger, days: DayLedger): Promise<number> {
  if ((await db.get(localKey(LEDGER_VERSION_NAME))) === LEDGER_VERSION) return 0;
  // Every stored event is read again, those of sources the ledger does not track included.
  await ledger.restartOtherCount(db);
  let read = 0;
  let from: string = PREFIX.time;
  const counts = days.begin();
  for (;;) {
    const entries = await db.iterator({ gte: from, lt: prefixEnd(PREFIX.time), limit: BACKFILL_BATCH_EVENTS }).all();
    if (entries.length === 0) break;
    const change = ledger.begin();
    for (const [key, json] of entries) {
      change.addJson(json);
      counts.countJson(json, decodeUint(key.slice(PREFIX.time.length, PREFIX.time.length + 16)), 'received');
    }
    const batch = db.batch();
    change.putChanged(batch);
    await batch.write({ sync: false });
    change.commit();
    read += entries.length;
    from = (entries[entries.length - 1] as [string, string])[0] + '\u0000';
  }
  // Synced, and only after every range: a crash before it means the backfill runs again (adding
  // a sourceSeq is idempotent; the counts were not written yet).
  const batch = db.batch();
  await counts.prepare();
  counts.putChanged(batch);
  batch.put(localKey(LEDGER_VERSION_NAME), LEDGER_VERSION);
  await batch.write({ sync: true });
  counts.commit();
  return read;
}
