import { AuditError, AuditErrorCode, EVENT_TIME_MAX_MS, timeBound } from '@auditlake/model';
import { dayOf, LEDGER_RANGES_MAX, LEDGER_RETIRE_FROM_SOURCES, LEDGER_SOURCE_IDLE_DAYS, LEDGER_SOURCES_MAX, type AuditStore } from '@auditlake/store';
import type { FastifyInstance } from 'fastify';
import { Gauge, type Registry } from 'prom-client';
import { refuseUnknownParams } from './known-params.js';
import { dayCursor, ledgerPageParams } from './ledger-page-params.js';
import './route-access.js';

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * A `from`/`to` day: `YYYY-MM-DD`, or a time (epoch millis, ISO-8601) whose UTC day is meant;
 * a time up to EVENT_TIME_MAX_MS, the latest an event may have (past it there is no day to name).
 */
function dayParam(name: string, value: unknown): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter ${name} must be given once: ${JSON.stringify(value)}`);
  if (DAY.test(value)) {
    // Date.parse rolls 2026-02-30 over to March: the day must come back as written.
    const ms = Date.parse(`${value}T00:00:00Z`);
    if (Number.isNaN(ms) || dayOf(ms) !== value) throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter ${name} is not a calendar day: ${value}`);
    return value;
  }
  const ms = timeBound(name, value);
  if (ms > EVENT_TIME_MAX_MS) {
    throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter ${name} must be a time from 0 to ${EVENT_TIME_MAX_MS} (${new Date(EVENT_TIME_MAX_MS).toISOString()}): ${value}`);
  }
  return dayOf(ms);
}

/**
 * `GET /admin/audit/ledger[?sourceId=…|?after=…][&limit=…][&gapsLimit=…][&from=…][&to=…][&daysAfter=…][&daysLimit=…]`: the
 * completeness ledger as this node holds it — per source that sends `sourceSeq`, how many
 * distinct sourceSeqs arrived, the first, the highest reached without a hole, the highest, and
 * the newest holes as ranges (`gapsLimit` of them; `gapCount` and `missing` count all), a page
 * of `limit` sources by sourceId at a time (`next` is the `after` of the following page), or
 * the one `sourceId`; totals over every tracked source (`otherSourceEvents`: the events of
 * sources past the LEDGER_SOURCES_MAX tracked; `sourcesRetired` and `retiredMissing`: the idle
 * sources the ledger retired and the sourceSeqs they missed then); and per day (of the events' time, UTC) and
 * source, how many events were received, are stored, are tiered and were pruned, `daysLimit`
 * rows at a time (`daysNext` is the `daysAfter` of the following rows).
 * `countTiered` brings the tiered counts up to the watermark this node knows before the answer.
 * Bounded: the ledger holds at most LEDGER_RANGES_MAX ranges, and a page at most
 * LEDGER_PAGE_SOURCES_MAX sources with LEDGER_PAGE_GAPS_MAX holes each and
 * LEDGER_PAGE_DAY_ROWS_MAX day rows.
 */
export function registerLedgerRoute(app: FastifyInstance, options: { store: AuditStore; countTiered: () => Promise<void> }): void {
  app.get('/admin/audit/ledger', { config: { access: { role: 'admin', action: 'audit:ReadLedger' } } }, async (request) => {
    const query = request.query as Record<string, unknown>;
    refuseUnknownParams(query, LEDGER_PARAMS);
    const raw = query['sourceId'];
    if (raw !== undefined && (typeof raw !== 'string' || raw === '')) {
      throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter sourceId must be one non-empty source id: ${JSON.stringify(raw)}`);
    }
    const page = ledgerPageParams(query);
    const fromDay = dayParam('from', query['from']);
    const toDay = dayParam('to', query['to']);
    if (fromDay !== undefined && toDay !== undefined && fromDay > toDay) throw new AuditError(AuditErrorCode.BAD_REQUEST, `parameter from must not be after to: ${fromDay} > ${toDay}`);
    await options.countTiered();
    const dayFilter = { ...(fromDay !== undefined ? { fromDay } : {}), ...(toDay !== undefined ? { toDay } : {}), ...(raw !== undefined ? { sourceId: raw } : {}) };
    const dayPage = await options.store.dayLedgerPage(dayFilter, { ...(page.daysAfter !== undefined ? { after: page.daysAfter } : {}), limit: page.daysLimit });
    const days = dayPage.rows;
    const daysNext = dayCursor(dayPage.next);
    const summary = options.store.sourceLedgerSummary();
    if (raw !== undefined) {
      // One source: the totals are its own.
      const sources = options.store.sourceLedger(raw, page.gapsLimit);
      const missing = sources.reduce((n, s) => n + s.missing, 0);
      return { sources, next: null, sourcesTracked: sources.length, sourcesWithGaps: missing > 0 ? 1 : 0, missing, otherSourceEvents: summary.otherSourceEvents, sourcesRetired: summary.retiredSources, retiredMissing: summary.retiredMissing, days, daysNext };
    }
    const { sources, next } = options.store.sourceLedgerPage({ ...(page.after !== undefined ? { after: page.after } : {}), limit: page.limit, gapsMax: page.gapsLimit });
    return {
      sources,
      next,
      sourcesTracked: summary.sources,
      sourcesWithGaps: summary.sourcesWithGaps,
      missing: summary.missing,
      otherSourceEvents: summary.otherSourceEvents,
      sourcesRetired: summary.retiredSources,
      retiredMissing: summary.retiredMissing,
      days,
      daysNext,
    };
  });
}

const LEDGER_PARAMS = ['sourceId', 'after', 'limit', 'gapsLimit', 'from', 'to', 'daysAfter', 'daysLimit'];

/**
 * `/metrics`: how many sourceSeqs the ledger misses, over every source, how many sources miss
 * some, and how many ranges it holds: totals the ledger keeps as events arrive, so a scrape
 * builds no entry.
 */
export function registerLedgerGauges(registry: Registry, store: AuditStore): void {
  const registers = [registry];
  new Gauge({
    name: 'auditlake_ledger_missing_source_seqs',
    help: 'sourceSeqs a source counted that never arrived (holes in the completeness ledger), over every source, the idle sources retired from the ledger included',
    registers,
    collect() {
      // Retired sources' holes stay counted: retiring an idle source must not read as its
      // missing events having arrived.
      const summary = store.sourceLedgerSummary();
      this.set(summary.missing + summary.retiredMissing);
    },
  });
  new Gauge({
    name: 'auditlake_ledger_sources_with_gaps',
    help: 'Sources whose received sourceSeqs have at least one hole',
    registers,
    collect() {
      this.set(store.sourceLedgerSummary().sourcesWithGaps);
    },
  });
  // Sources past the bound are counted together, without holes: a source id per process
  // instance (a pod, a job) reaches it over time, and gaps of later sources then go unseen
  // until idle sources are retired (LEDGER_SOURCE_IDLE_DAYS).
  new Gauge({
    name: 'auditlake_ledger_sources_tracked',
    help: `Sources the completeness ledger tracks one by one (at most ${LEDGER_SOURCES_MAX}; the events of further sources are counted together, without holes)`,
    registers,
    collect() {
      this.set(store.sourceLedgerSummary().sources);
    },
  });
  new Gauge({
    name: 'auditlake_ledger_sources_retired',
    help: `Sources retired from the completeness ledger after no event over more than ${LEDGER_SOURCE_IDLE_DAYS} days of events, while it tracked at least ${LEDGER_RETIRE_FROM_SOURCES}`,
    registers,
    collect() {
      this.set(store.sourceLedgerSummary().retiredSources);
    },
  });
  new Gauge({
    name: 'auditlake_ledger_untracked_source_events',
    help: `Events with a sourceSeq of sources past the ${LEDGER_SOURCES_MAX} the ledger tracks: no holes are known for them`,
    registers,
    collect() {
      this.set(store.sourceLedgerSummary().otherSourceEvents);
    },
  });
  // How close the ledger is to its bound: past it, the oldest holes of a source are joined and
  // no longer reported, so an operator alerting on holes wants to see it coming.
  new Gauge({
    name: 'auditlake_ledger_ranges',
    help: `Ranges of received sourceSeqs the completeness ledger holds over all sources (at most ${LEDGER_RANGES_MAX}; past that, a source's oldest holes are joined)`,
    registers,
    collect() {
      this.set(store.sourceLedgerRanges());
    },
  });
}
