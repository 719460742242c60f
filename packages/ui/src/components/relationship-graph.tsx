import type { AuditStats } from '@auditlake/model';
import { useMemo } from 'preact/hooks';
import { engineColor } from '../engine-colors.js';
import { layoutGraph, type GraphNode } from '../graph-layout.js';
import { useWidth } from '../use-width.js';
import { revealHidden } from '../display-text.js';

const KIND_COLORS = { user: 'var(--user-node)', table: 'var(--table-node)' } as const;

function label(node: GraphNode, width: number): string {
  // Users' labels run left of their column, tables' right of theirs: about a sixth of the width each.
  const chars = Math.max(6, Math.floor(width / 6 / 7));
  const name = revealHidden(node.name);
  return name.length > chars ? name.slice(0, chars - 1) + '…' : name;
}

/** A node's kind, name and events in the window (all of them, drawn links or not). */
function nodeTitle(node: GraphNode): string {
  return `${node.kind} ${revealHidden(node.name)}: ${node.atLeast ? 'at least ' : ''}${node.count} events`;
}

/**
 * user → engine → table, laid out by d3-force in three columns. Each node is a button: a click
 * (or Enter/Space) drills down to that entity's events below the graph.
 */
export function RelationshipGraph({ stats, focus, onSelect }: { stats: AuditStats; focus: string | undefined; onSelect: (node: GraphNode) => void }) {
  const { ref, width } = useWidth<HTMLDivElement>();
  const layout = useMemo(() => layoutGraph(stats, width), [stats, width]);
  if (layout.nodes.length === 0) {
    return (
      <div ref={ref} class="graph-empty">
        No events in this window.
      </div>
    );
  }
  return (
    <div ref={ref} class="graph">
      <svg viewBox={`0 0 ${layout.width} ${layout.height}`} width={layout.width} height={layout.height} role="group" aria-label="Users, engines and tables, linked by their events">
        <g class="columns" aria-hidden="true">
          <text x={layout.nodes.find((n) => n.kind === 'user')?.x ?? 0} y={12} text-anchor="middle">
            users
          </text>
          <text x={layout.width / 2} y={12} text-anchor="middle">
            engines
          </text>
          <text x={layout.nodes.find((n) => n.kind === 'table')?.x ?? layout.width} y={12} text-anchor="middle">
            tables
          </text>
        </g>
        <g class="links" aria-hidden="true">
          {layout.links.map((l) => (
            <line key={`${l.source.id}→${l.target.id}`} x1={l.source.x} y1={l.source.y} x2={l.target.x} y2={l.target.y} stroke-width={l.width}>
              <title>{`${revealHidden(l.source.name)} → ${revealHidden(l.target.name)}: ${l.count}`}</title>
            </line>
          ))}
        </g>
        <g class="nodes">
          {layout.nodes.map((n) => {
            const selected = focus === n.id;
            // Users' labels left of them, engines' and tables' right of them.
            const anchor = n.kind === 'user' ? 'end' : 'start';
            const dx = n.kind === 'user' ? -(n.radius + 4) : n.radius + 4;
            const dy = 4;
            return (
              <g
                key={n.id}
                class={`node node-${n.kind}${selected ? ' selected' : ''}`}
                data-node={n.id}
                role="button"
                tabindex={0}
                aria-pressed={selected}
                aria-label={nodeTitle(n)}
                transform={`translate(${n.x},${n.y})`}
                onClick={() => onSelect(n)}
                onKeyDown={(e) => {
                  if (e.key === 'Enter' || e.key === ' ') {
                    e.preventDefault();
                    onSelect(n);
                  }
                }}
              >
                <title>{nodeTitle(n)}</title>
                <circle r={n.radius} fill={n.kind === 'engine' ? engineColor(n.name) : KIND_COLORS[n.kind]} />
                <text x={dx} y={dy} text-anchor={anchor}>
                  {label(n, layout.width)}
                </text>
              </g>
            );
          })}
        </g>
      </svg>
      {layout.hiddenLinks > 0 && <p class="hint">Showing the heaviest links; {layout.hiddenLinks} lighter ones are not drawn (the counts of the nodes include them).</p>}
    </div>
  );
}
