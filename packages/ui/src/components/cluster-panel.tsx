import type { ClusterAnswer, ClusterNodeView } from '../api.js';
import { formatTime } from './event-table.js';
import { ShownText } from './shown-text.js';

function lag(node: ClusterNodeView): string {
  if (node.lagMs === undefined || node.lagMs === null) return '–';
  return node.lagMs < 1000 ? `${node.lagMs} ms` : `${(node.lagMs / 1000).toFixed(1)} s`;
}

/** The cluster as the answering node sees it: term, leader, every node with role and lag, and nodes not heard from. */
export function ClusterPanel({ cluster }: { cluster: ClusterAnswer }) {
  const unreachable = [...(cluster.unreachable ?? []), ...cluster.nodes.filter((n) => n.reachable === false)];
  const reachable = cluster.nodes.filter((n) => n.reachable !== false);
  return (
    <section class="cluster" aria-labelledby="cluster-title">
      <h3 id="cluster-title">Cluster</h3>
      <p>
        Term <strong>{cluster.term}</strong>, leader{' '}
        <strong>
          <ShownText text={cluster.leader?.nodeId ?? 'none reachable'} />
        </strong>
        ; this answer is from <ShownText text={cluster.nodeId} /> (<ShownText text={cluster.role} />).
      </p>
      <div class="table-scroll">
        <table class="nodes">
          <thead>
            <tr>
              <th scope="col">Node</th>
              <th scope="col">Role</th>
              <th scope="col">Applied seq</th>
              <th scope="col">Lag</th>
            </tr>
          </thead>
          <tbody>
            {reachable.map((n) => (
              <tr key={n.nodeId}>
                <td>
                  <ShownText text={n.nodeId} title={n.url} />
                </td>
                <td>
                  <ShownText text={n.role} />
                </td>
                <td>{n.appliedSeq ?? '–'}</td>
                <td>{lag(n)}</td>
              </tr>
            ))}
            {unreachable.map((n) => (
              <tr key={`unreachable-${n.nodeId}`} class="unreachable">
                <td>
                  <ShownText text={n.nodeId} title={n.url} />
                </td>
                <td>unreachable</td>
                <td>{n.appliedSeq ?? '–'}</td>
                <td>{n.lastHeardMs === undefined ? 'not heard from' : `last heard ${formatTime(n.lastHeardMs)}`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
