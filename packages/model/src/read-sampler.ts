import { READ_ACTION, type AuditEvent } from './event.js';

export interface ReadSampling {
  readEnabled: boolean;
  readSampleRate: number;
}

/**
 * Only allowed `data:Select` events are sampled; a DENY is always kept (reference: denials are
 * never subject to read sampling).
 */
export function subjectToReadSampling(event: Pick<AuditEvent, 'action' | 'decision'>): boolean {
  return event.action === READ_ACTION && event.decision !== 'DENY';
}

/** Whether one event subject to read sampling is kept. `random` returns [0, 1). */
export function keepSampledRead(sampling: ReadSampling, random: () => number): boolean {
  if (!sampling.readEnabled) return false;
  if (sampling.readSampleRate >= 1) return true;
  return random() < sampling.readSampleRate;
}

/**
 * Decides whether an event is kept under read sampling. `random` is injected so tests can
 * replay a run.
 */
export function keepUnderSampling(event: AuditEvent, sampling: ReadSampling, random: () => number): boolean {
  return !subjectToReadSampling(event) || keepSampledRead(sampling, random);
}
