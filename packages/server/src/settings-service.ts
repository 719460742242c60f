import {
  AuditError,
  AuditErrorCode,
  SELF_SOURCE,
  SETTINGS_HISTORY_META,
  SETTINGS_RECORD_META,
  settingsHistoryWith,
  UPDATE_SETTINGS_ACTION,
  defaultSettings,
  describeChanges,
  isSettingKey,
  mergeSettings,
  newEventId,
  parseSettings,
  type EffectiveSettings,
  type NodeConfig,
  type SettingChange,
  type SettingKey,
  type Settings,
} from '@auditlake/model';
import type { AuditStore, Sequencer } from '@auditlake/store';

/**
 * The keys that name the tier target. A change of one is checked against the bucket before it
 * is saved, and stores all four (the target is saved whole): a key left following each node's
 * configuration would give a standby configured otherwise another target than the one the
 * leader checked — or none it can run (the mode `parquet` saved, its path empty in that node's
 * configuration), which it refused at its next start.
 */
const TARGET_KEYS: readonly SettingKey[] = ['audit.tier.mode', 'audit.tier.iceberg.table', 'audit.tier.parquet.path', 'audit.tier.connectionId'];
const isTargetKey = (key: string): boolean => (TARGET_KEYS as readonly string[]).includes(key);

/** The replicated-metadata name under which explicitly set settings are kept. */
export const SETTINGS_META = 'settings';

type Overrides = Partial<Settings>;

/** What one save did: the settings after it, the values it changed, and what was in force before it (saves are serialised: not another save's). */
export interface SettingsSaved {
  settings: Settings;
  changes: readonly SettingChange[];
  before: EffectiveSettings;
}
export type SettingsListener = (effective: EffectiveSettings, changes: readonly SettingChange[]) => void;

/**
 * Checks what cannot be checked without I/O or the node's configuration (a tier target's
 * connection, bucket, catalog); `changed` holds the keys the save changes.
 */
export type SettingsValidator = (effective: EffectiveSettings, changed: ReadonlySet<SettingKey>) => Promise<void>;

/**
 * Runtime settings: configuration defaults with the keys an operator has set stored over them
 * (only those, so an unset key keeps following `auditlake.*` configuration). Updates are
 * serialised so two concurrent saves cannot lose each other's keys.
 */
export class SettingsService {
  readonly #store: AuditStore;
  readonly #defaults: Settings;
  #overrides: Overrides = {};
  #effective: EffectiveSettings;
  #updating: Promise<unknown> = Promise.resolve();
  readonly #listeners: SettingsListener[] = [];

  readonly #validate: SettingsValidator | undefined;
  readonly #sequencer: Sequencer | undefined;

  private constructor(store: AuditStore, config: NodeConfig, validate: SettingsValidator | undefined, sequencer: Sequencer | undefined) {
    this.#store = store;
    this.#validate = validate;
    this.#sequencer = sequencer;
    this.#defaults = defaultSettings(config);
    this.#effective = parseSettings(this.#defaults);
  }

  /**
   * `sequencer` orders the settings change's audit event (a cluster node passes the leader's;
   * default: the store's own).
   */
  static async load(store: AuditStore, config: NodeConfig, validate?: SettingsValidator, sequencer?: Sequencer): Promise<SettingsService> {
    const service = new SettingsService(store, config, validate, sequencer);
    await service.reload();
    return service;
  }

  /** Re-reads the stored settings (a standby does this after replication changed them). */
  async reload(): Promise<void> {
    const previous = this.current;
    const overrides = (await this.#store.getMeta<Overrides>(SETTINGS_META)) ?? {};
    // Parsed before either is replaced: settings this node's configuration refuses leave it with
    // the ones it had, whole, rather than showing the new ones while running the old (review).
    const effective = this.#parseStored(overrides);
    this.#overrides = overrides;
    this.#effective = effective;
    const now = this.current;
    const changes = (Object.keys(now) as SettingKey[]).filter((k) => now[k] !== previous[k]).map((key) => ({ key, from: previous[key], to: now[key] }));
    if (changes.length > 0) for (const listener of this.#listeners) listener(this.#effective, changes);
  }

  /**
   * The saved keys merged over this node's configuration, parsed. Refused, the error says which
   * keys were saved (every node runs them) and what to do: the rest is this node's own.
   */
  #parseStored(overrides: Overrides): EffectiveSettings {
    try {
      return parseSettings({ ...this.#defaults, ...overrides });
    } catch (err) {
      if (!(err instanceof AuditError) || Object.keys(overrides).length === 0) throw err;
      const saved = Object.keys(overrides).join(', ');
      throw new AuditError(
        AuditErrorCode.SETTINGS_INVALID,
        `the saved runtime settings do not fit this node's auditlake.audit.* configuration: ${err.message} (saved at runtime, and run by every node: ${saved}; every other key follows this node's configuration). Give this node the configuration the node that saved them has, or save the tier target again on the leader (a save of any of its keys stores all four)`,
      );
    }
  }

  /** Every runtime key with its value in force, as stored (strings); settingsView types them for the API. */
  get current(): Settings {
    return { ...this.#defaults, ...this.#overrides };
  }

  /**
   * The eventId of the `audit:UpdateSettings` record that set the stored settings (whoever
   * saved them, kept across restarts) while the log holds it, or undefined: a cluster leader's
   * answer waits for a standby to hold it.
   */
  async lastChangeEventId(): Promise<string | undefined> {
    const eventId = await this.#store.getMeta<string>(SETTINGS_RECORD_META);
    if (eventId === undefined) return undefined;
    // Retention deletes a record only once tiered, and a leader tiers only what the standbys it
    // hears from hold: one no longer in the log is not waited for (it would never be found;
    // review). A leader that heard from none tiers alone, so there this can answer without a
    // warning for a record no standby got — the change's own answer warned then.
    const [seq] = await this.#store.seqsOfEventIds([eventId]);
    return seq === undefined ? undefined : eventId;
  }

  get effective(): EffectiveSettings {
    return this.#effective;
  }

  onChange(listener: SettingsListener): void {
    this.#listeners.push(listener);
  }

  /**
   * Validates `request` merged over the current settings and, if anything changed, stores the
   * new overrides together with the `audit:UpdateSettings` event recording them (one synced
   * batch: a settings change is never in force without its audit record). Throws on invalid
   * input with nothing persisted.
   */
  update(request: unknown, userId: string): Promise<SettingsSaved> {
    const run = this.#updating.then(() => this.#apply(request, userId));
    this.#updating = run.catch(() => undefined);
    return run;
  }

  /**
   * The request with each setting key given null replaced by the value the configuration gives
   * it (so it is validated merged like any value), and those keys. A target key given null
   * unsets the whole target (it is saved whole, see TARGET_KEYS); another target key given a
   * value other than the one in force in the same request is refused. Anything else is left
   * for mergeSettings to refuse or take.
   */
  #unsetValued(request: unknown): { valued: unknown; unsetKeys: SettingKey[] } {
    if (typeof request !== 'object' || request === null || Array.isArray(request)) return { valued: request, unsetKeys: [] };
    const given = request as Record<string, unknown>;
    const unsetKeys = (Object.keys(given) as SettingKey[]).filter((key) => given[key] === null && isSettingKey(key));
    if (unsetKeys.length === 0) return { valued: request, unsetKeys };
    const nulled = unsetKeys.find(isTargetKey);
    if (nulled !== undefined) {
      for (const key of TARGET_KEYS) {
        if (given[key] === undefined || given[key] === null) continue;
        if (mergeSettings(this.current, { [key]: given[key] }).changes.length > 0) {
          throw new AuditError(
            AuditErrorCode.SETTINGS_INVALID,
            `${nulled} is given null, which unsets the whole tier target (${TARGET_KEYS.join(', ')}: saved together), while ${key} is given a new value in the same request: unset the target, or give its keys values — nothing was saved`,
          );
        }
      }
      for (const key of TARGET_KEYS) if (!unsetKeys.includes(key)) unsetKeys.push(key);
    }
    const valued: Record<string, unknown> = { ...given };
    for (const key of unsetKeys) valued[key] = this.#defaults[key];
    return { valued, unsetKeys };
  }

  async #apply(request: unknown, userId: string): Promise<SettingsSaved> {
    const before = this.#effective;
    const { valued, unsetKeys } = this.#unsetValued(request);
    const update = mergeSettings(this.current, valued);
    // A saved key given null is unset: it follows the configuration again, also when that gives
    // the value it had (still a change of what is stored, so recorded).
    const unset = unsetKeys.filter((key) => key in this.#overrides).map((key) => ({ key, from: this.current[key], to: this.#defaults[key] }));
    if (update.changes.length === 0 && unset.length === 0) return { settings: this.current, changes: [], before };
    // A tier target is checked, merged over what is stored, when a key naming it changes. Not
    // for the other tier keys (maintenance, local retention): checked for them too, a bucket
    // outage refused every change of those — lengthening local retention because the bucket is
    // down, say (review).
    if (this.#validate && update.changes.some((c) => isTargetKey(c.key))) await this.#validate(update.effective, new Set(update.changes.map((c) => c.key)));
    const overrides: Overrides = { ...this.#overrides };
    // Only the keys the request changed: one sent with the value in force stays as it was — set
    // if it was, else following the node's configuration. Every key named was stored before, so
    // a GET answer posted back with one value edited fixed every other key at the value the
    // configuration gave it then, recorded nowhere (the record names changes only), and a later
    // change of the configuration no longer took effect (review).
    for (const change of update.changes) overrides[change.key] = update.merged[change.key];
    // The target is saved whole (TARGET_KEYS): the keys of it that followed the configuration are
    // stored at the values the check above ran with, and recorded so.
    const pinned: { key: SettingKey; value: string }[] = [];
    if (update.changes.some((c) => isTargetKey(c.key))) {
      for (const key of TARGET_KEYS) {
        if (key in overrides) continue;
        overrides[key] = update.merged[key];
        pinned.push({ key, value: update.merged[key] });
      }
    }
    for (const { key } of unset) delete overrides[key];
    const pinnedSaved = pinned.filter((p) => p.key in overrides);
    const nowMs = Date.now();
    const eventId = newEventId(nowMs);
    await this.#store.append(
      [
        {
          eventId,
          userId,
          source: SELF_SOURCE,
          action: UPDATE_SETTINGS_ACTION,
          resource: 'audit.settings',
          decision: 'ALLOW',
          tables: [],
          query: '',
          details: describeChanges(update.changes, unset, pinnedSaved),
          timestamp: nowMs,
        },
      ],
      {
        freshIds: new Set([eventId]),
        meta: [
          { name: SETTINGS_META, value: overrides },
          { name: SETTINGS_RECORD_META, value: eventId },
          { name: SETTINGS_HISTORY_META, value: settingsHistoryWith(this.#store.meta<string[]>(SETTINGS_HISTORY_META), this.#store.meta<string>(SETTINGS_RECORD_META), eventId) },
        ],
        ...(this.#sequencer ? { sequencer: this.#sequencer } : {}),
      },
    );
    this.#overrides = overrides;
    this.#effective = update.effective;
    for (const listener of this.#listeners) listener(update.effective, update.changes);
    return { settings: this.current, changes: update.changes, before };
  }
}
