import { AuditError, AuditErrorCode, settingsView } from '@auditlake/model';
import type { FastifyInstance } from 'fastify';
import { keepBodyText, PROXY_TIMEOUT_MS, proxyToLeader } from '../leader-proxy.js';
import { jsonDuplicateMember } from '../json-duplicate-member.js';
import type { Membership } from '../membership.js';
import type { SettingsSaved, SettingsService } from '../settings-service.js';
import type { TieringService } from '../tiering-service.js';
import './route-access.js';

/**
 * On a cluster leader, waits until a standby holds the record of the change that set the stored
 * settings (the settings with it, in the same replicated write), at most `timeoutMs`: a warning
 * for the answer when none did, else undefined. Without it, a change acknowledged while no
 * standby pulled was lost when the leader failed — the next leader ran the settings from before
 * it (a redaction key added, say, and values it should mask stored unmasked), while the change's
 * own record came back into the log when the old leader rejoined (review). The same settings
 * posted again (no change) wait for the same record, also after the leader restarted. Not
 * waited for when no other node was heard from since this one started: none would answer.
 */
async function replicationWarning(settings: SettingsService, membership: Membership, timeoutMs: number): Promise<string | undefined> {
  if (!membership.coordinated) return undefined;
  const eventId = await settings.lastChangeEventId();
  if (eventId === undefined) return undefined;
  const status = await membership.status();
  const heard = status.nodes.some((node) => node.nodeId !== status.nodeId);
  if (heard && (await membership.confirmReplicated([{ eventId }], timeoutMs))) return undefined;
  const why = heard ? `no standby confirmed them within ${timeoutMs} ms` : 'no standby has been heard from since this node started';
  return `the settings are saved and in force on this leader, but ${why}: should this leader fail before a standby holds them, the next leader runs the settings it held before (its audit:UpdateSettings record would come back into the log as audit:UpdateSettingsLost); post the same settings again to wait for a standby's confirmation`;
}

/**
 * When this save turned tiering off (its own change, not a concurrent save's) while records were
 * deferred (older than retention, kept only because they were never tiered): retention deletes
 * them now, which the operator may not have meant. `deferredBefore` is the count read before the
 * save (at most 10 s old); undefined otherwise.
 */
export function tieringOffWarning(saved: SettingsSaved, deferredBefore: number): string | undefined {
  const turnedOff = saved.before.tierMode !== 'none' && saved.changes.some((change) => change.key === 'audit.tier.mode' && change.to === 'none');
  if (deferredBefore === 0 || !turnedOff) return undefined;
  return `tiering is off now, so the ${deferredBefore} records held only because they were never tiered (tierStatus.deferred, older than audit.retention.days) are deleted at retention's next run and kept nowhere else (setting audit.tier.mode back keeps those not deleted yet)`;
}

export function registerSettingsRoutes(app: FastifyInstance, settings: SettingsService, membership: Membership, tiering: TieringService, ackReplicatedTimeoutMs: number): void {
  // Numbers and booleans as JSON numbers and booleans; the answer can be posted back as it is.
  const view = async () => ({ ...settingsView(settings.current), tierStatus: await tiering.status() });
  app.get('/admin/audit/settings', { config: { access: { role: 'admin', action: 'audit:ReadSettings' } } }, async (request, reply) => {
    if (await proxyToLeader(membership.leaderUrl(), request, reply)) return reply;
    return membership.isLeader() ? view() : { ...(await view()), stale: true };
  });
  // In a scope of its own: only this route's JSON bodies are read by the parser that refuses a key given twice.
  void app.register(async (scope) => {
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, (request, raw, done) => {
      const text = raw as string;
      // A leading byte-order mark is taken, as Fastify's own parser takes it (review).
      const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
      // A standby forwards the text itself to the leader, which judges it as sent.
      keepBodyText(request, body);
      let value: unknown;
      try {
        value = JSON.parse(body);
      } catch (err) {
        // A client's error, as Fastify's own parser marks it: answered 400 "not valid JSON".
        done(Object.assign(err as Error, { statusCode: 400 }), undefined);
        return;
      }
      const twice = jsonDuplicateMember(body);
      if (twice === undefined) done(null, value);
      else done(new AuditError(AuditErrorCode.SETTINGS_INVALID, `the request names ${JSON.stringify(twice)} twice; name each key once (nothing was saved)`), undefined);
    });
    scope.post('/admin/audit/settings', { config: { access: { role: 'admin', action: 'audit:UpdateSettings' } } }, async (request, reply) => {
      // The leader's answer waits for a standby up to the ack timeout: the proxy waits longer.
      if (await proxyToLeader(membership.leaderUrl(), request, reply, { timeoutMs: ackReplicatedTimeoutMs + PROXY_TIMEOUT_MS })) return reply;
      if (!membership.isLeader()) {
        throw new AuditError(AuditErrorCode.NOT_LEADER, 'no leader is reachable, so settings cannot be changed now (nothing was saved); retry once a leader is elected', { retryable: true });
      }
      // Counted before the save is queued (a count at most 10 s old either way); used only when
      // this save is the one that turned tiering off.
      const deferredBefore = settings.effective.tierMode === 'none' ? 0 : (await tiering.status()).deferred;
      const saved = await settings.update(request.body, request.principal?.name ?? 'unknown');
      const warnings = [tieringOffWarning(saved, deferredBefore), await replicationWarning(settings, membership, ackReplicatedTimeoutMs)].filter((w) => w !== undefined);
      return warnings.length === 0 ? view() : { ...(await view()), warning: warnings.join('; also, ') };
    });
  });
}
