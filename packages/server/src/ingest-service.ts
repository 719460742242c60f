import { keepUnderSampling, newEventId, validateIngestBody } from '@auditlake/model';
import type { AuditStore } from '@auditlake/store';
import type { NodeMetrics } from './metrics.js';
import type { SettingsService } from './settings-service.js';

export interface IngestResponse {
  status: 'ok';
  /** Events accepted: newly stored plus those already stored under the same eventId. */
  ingested: number;
  /** Present when read sampling dropped some events. */
  sampledOut?: number;
}

/**
 * validate (all or nothing) → sample reads (DENY never) → durable write → answer.
 */
export class IngestService {
  readonly #store: AuditStore;
  readonly #settings: SettingsService;
  readonly #metrics: NodeMetrics;
  readonly #random: () => number;

  constructor(store: AuditStore, settings: SettingsService, metrics: NodeMetrics, random: () => number) {
    this.#store = store;
    this.#settings = settings;
    this.#metrics = metrics;
    this.#random = random;
  }

  async ingest(body: unknown): Promise<IngestResponse> {
    const freshIds = new Set<string>();
    const newId = (nowMs: number) => {
      const id = newEventId(nowMs);
      freshIds.add(id);
      return id;
    };
    let events;
    try {
      events = validateIngestBody(body, { nowMs: Date.now(), newId });
    } catch (err) {
      this.#metrics.eventsRefused.inc(Array.isArray(body) ? body.length : 1);
      throw err;
    }
    const sampling = this.#settings.effective;
    const kept = events.filter((event) => keepUnderSampling(event, sampling, this.#random));
    const sampledOut = events.length - kept.length;
    const result = kept.length === 0 ? { stored: [], duplicates: 0 } : await this.#store.append(kept, { freshIds });
    this.#metrics.eventsIngested.inc(result.stored.length);
    if (result.duplicates > 0) this.#metrics.eventsDuplicate.inc(result.duplicates);
    if (sampledOut > 0) this.#metrics.eventsSampledOut.inc(sampledOut);
    const response: IngestResponse = { status: 'ok', ingested: kept.length };
    if (sampledOut > 0) response.sampledOut = sampledOut;
    return response;
  }
}
