// Steps for tests that drive the simulator one fault at a time.
import type { AuditEvent } from '@auditlake/model';
import type { SimCluster } from '../src/sim-cluster.js';
import type { SimNode } from '../src/sim-node.js';

/** Sends `events` to `node` (with ack=replicated when `replicated`) and runs the cluster until it answers; true on a 200. */
export async function send(cluster: SimCluster, node: SimNode, events: AuditEvent[], replicated: boolean): Promise<boolean> {
  let answer: boolean | undefined;
  void cluster.workload.send(node, events, replicated).then((ok) => (answer = ok));
  await cluster.scheduler.runUntil(() => answer !== undefined, 60_000);
  return answer === true;
}

/** Whether `node` is up and leads. */
export const leads = (node: SimNode): boolean => node.state === 'up' && node.cluster?.isLeader() === true;

/** Runs the cluster until `predicate` holds (at most a virtual minute); throws naming `what` otherwise. */
export async function until(cluster: SimCluster, what: string, predicate: () => boolean): Promise<void> {
  if (!(await cluster.scheduler.runUntil(predicate, 60_000))) throw new Error(`never: ${what}\n${cluster.diagnostics()}`);
}
