import { revealHidden } from '../display-text.js';
import { DECISION_COLORS, engineColor } from '../engine-colors.js';
import { ShownText } from './shown-text.js';

/** A red DENY or green ALLOW badge; an event without a decision shows a muted dash. */
export function DecisionBadge({ decision }: { decision: string }) {
  if (decision === 'DENY' || decision === 'ALLOW') {
    return (
      <span class={`badge decision-${decision.toLowerCase()}`} style={{ backgroundColor: DECISION_COLORS[decision] }}>
        {decision}
      </span>
    );
  }
  return (
    <span class="badge decision-none" title="No decision recorded">
      –
    </span>
  );
}

/** The engine's name on its colour (auditlake, trino, spark, flink fixed; others from a palette). */
export function EngineBadge({ engine }: { engine: string }) {
  return (
    <span class="badge engine" style={{ backgroundColor: engineColor(engine) }} title={revealHidden(engine)}>
      <ShownText text={engine} />
    </span>
  );
}
