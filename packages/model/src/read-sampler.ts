import { READ_ACTION, type AuditEvent } from './event.js';

export interface ReadSampling {
  readEnabled: boolean;
  readSampleRate: number;
}

/**
 * Decides whether an event is kept under read sampling. Only allowed `data:Select` events are
 * sampled; a DENY is always kept (reference: denials are never subject to read sampling).
 * `random` returns [0, 1) and is injected so tests can replay a run.
 */
export function keepUnderSampling(event: AuditEvent, sampling: ReadSampling, random: () => number): boolean {
  if (event.action !== READ_ACTION || event.decision === 'DENY') return true;
  if (!sampling.readEnabled) return false;
  if (sampling.readSampleRate >= 1) return true;
  return random() < sampling.readSampleRate;
}
