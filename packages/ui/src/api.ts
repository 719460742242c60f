import type { AuditStats, EventOutput } from '@auditlake/model';

/** A refused or failed API call, with the server's own message (shown to the user verbatim). */
export class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export interface SearchAnswer {
  events: EventOutput[];
  count: number;
  truncated: boolean;
  nextCursor?: string;
  tierNote?: string;
  stale?: boolean;
}

export type StatsAnswer = AuditStats & { stale?: boolean };

export interface TierStatus {
  mode: string;
  lastSuccessMs: number;
  lastFailureMs: number;
  lastError: string | null;
  retainLocalDays: number;
  watermark?: { ingestTs: number; seq: number };
  backlog?: number;
  deferred?: number;
  nextAttemptMs?: number;
  lastBatch?: { count: number; bytes: number; ms: number } | null;
  /** The oldest erasure record a tier location has not applied: local retention keeps it and what follows (null: none). */
  erasureHoldSeq?: number | null;
  /** Retention counts the log as tiered only through throughSeq, below the watermark: later entries belong to a later term than the watermark's (null: nothing held so). */
  retentionHeldByTerm?: { throughSeq: number; watermarkSeq: number } | null;
  /** A cluster leader's standbys that do not hold its whole log yet, and how far they all do (null: nothing held back). */
  heldByStandbys?: { throughSeq: number; nodes: string[]; notApplying?: string[] } | null;
  /** The completeness ledger summed up (GET /admin/audit/ledger has it per source). */
  ledger?: LedgerSummary;
}

/** tierStatus.ledger: the completeness ledger summed up (`sourcesRetired`, `retiredMissing`: absent from a node of a version before). */
export interface LedgerSummary {
  sources: number;
  sourcesWithGaps: number;
  missing: number;
  sourcesRetired?: number;
  retiredMissing?: number;
}

/** `GET /admin/audit/settings`: every runtime key (number, boolean or string) plus tierStatus. */
export type SettingsAnswer = Record<string, unknown> & { tierStatus: TierStatus; stale?: boolean; warning?: string };

export interface ClusterNodeView {
  nodeId: string;
  url: string;
  role: string;
  appliedSeq?: number;
  lagMs?: number | null;
  reachable?: boolean;
  lastHeardMs?: number;
}

export interface ClusterAnswer {
  nodeId: string;
  role: string;
  term: number;
  leader?: { nodeId: string; url: string } | null;
  nodes: ClusterNodeView[];
  unreachable?: ClusterNodeView[];
}

/** One maintenance run of a table: its figures, or why it failed. */
export interface MaintenanceRunView {
  table: string;
  startedMs: number;
  finishedMs: number;
  ok: boolean;
  error: string | null;
  /** `cron`, or the admin who pressed "Run now". */
  trigger: string;
  /** Why a scheduled run left compaction for a later one (the tier was behind); null or absent when it compacted. */
  compactionDeferred?: string | null;
  filesRewritten: number;
  filesAdded: number;
  snapshotsExpired: number;
  filesDeleted: number;
  orphansDeleted: number;
  /** Loose `_integrity/` checkpoint objects moved into packs; absent in runs recorded before packing existed. */
  checkpointsPacked?: number;
  /** A Parquet location's commit markers moved into packs; absent for Iceberg, failed runs and runs recorded before marker packing. */
  markersPacked?: number;
  /** Loose commit markers deleted once a pack older than the orphan age held them. */
  packedMarkersDeleted?: number;
  /** Compaction passes the run made; absent in runs recorded before passes existed. */
  compactionPasses?: number;
  /** Small files its time budget left for the next run (0 when none); null or absent when it did not compact. */
  smallFilesLeft?: number | null;
  bytesBefore: number;
  bytesAfter: number;
}

/** A table registered for maintenance, with its schedule and last runs (newest first). */
export interface MaintenanceRegistrationView {
  table: string;
  location: string;
  cron: string;
  nextRunMs: number | null;
  runs: MaintenanceRunView[];
}

export interface MaintenanceAnswer {
  registrations: MaintenanceRegistrationView[];
  stale?: boolean;
}

/** Search parameters as the API takes them; undefined and '' values are left out. */
export type QueryParams = Record<string, string | number | undefined>;

export function queryString(params: QueryParams): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(key, String(value));
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}

/** Calls this origin's API with the admin token in the Authorization header (never in the URL). */
export class AdminApi {
  readonly #token: string;
  readonly #onUnauthorized: (message: string) => void;

  constructor(token: string, onUnauthorized: (message: string) => void) {
    this.#token = token;
    this.#onUnauthorized = onUnauthorized;
  }

  async #call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { authorization: `Token ${this.#token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }), cache: 'no-store' });
    const text = await res.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const message = typeof (json as { error?: unknown } | undefined)?.error === 'string' ? (json as { error: string }).error : `${res.status} ${res.statusText}`;
      if (res.status === 401) this.#onUnauthorized(message);
      throw new ApiError(res.status, message);
    }
    return json as T;
  }

  search(params: QueryParams): Promise<SearchAnswer> {
    return this.#call('GET', `/admin/audit${queryString(params)}`);
  }

  stats(params: QueryParams): Promise<StatsAnswer> {
    return this.#call('GET', `/admin/audit/stats${queryString(params)}`);
  }

  settings(): Promise<SettingsAnswer> {
    return this.#call('GET', '/admin/audit/settings');
  }

  saveSettings(changes: Record<string, unknown>): Promise<SettingsAnswer> {
    return this.#call('POST', '/admin/audit/settings', changes);
  }

  cluster(): Promise<ClusterAnswer> {
    return this.#call('GET', '/admin/cluster');
  }

  maintenance(): Promise<MaintenanceAnswer> {
    return this.#call('GET', '/admin/audit/maintenance');
  }

  /** Runs one registered table's maintenance now, on the leader; answers the run. */
  runMaintenance(table: string): Promise<MaintenanceRunView> {
    return this.#call('POST', '/admin/audit/maintenance/run', { table });
  }
}
