export { startAuditNode, type AuditNode, type AuditNodeOptions } from './audit-node.js';
export { signHs256 } from './auth/jwt.js';
export type { AdminToken } from './node-identity.js';
