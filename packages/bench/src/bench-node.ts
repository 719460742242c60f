import { randomBytes } from 'node:crypto';
import { resolveConfig } from '@auditlake/model';
import { startAuditNode, type AuditNode } from '@auditlake/server';

export interface BenchNode {
  node: AuditNode;
  adminToken: string;
}

/**
 * A node in this process as an operator would run one: the default configuration (read sample
 * rate 1.0, so every event is stored; synced writes), logging off so the log does not dominate,
 * listening on a free loopback port.
 */
export async function startBenchNode(dataDir: string, props: Record<string, string> = {}): Promise<BenchNode> {
  const adminToken = randomBytes(24).toString('hex');
  const node = await startAuditNode({ dataDir, host: '127.0.0.1', port: 0, config: resolveConfig(new Map(Object.entries(props))), adminToken, logger: false });
  return { node, adminToken };
}
