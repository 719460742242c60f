export { startAuditNode, type AuditNode, type AuditNodeOptions } from './audit-node.js';
export { signHs256 } from './auth/jwt.js';
export type { AdminToken } from './node-identity.js';
export { ACCESS_KEY_ENV as EMBEDDED_S3_ACCESS_KEY_ENV, SECRET_KEY_ENV as EMBEDDED_S3_SECRET_KEY_ENV, type EmbeddedS3Credentials } from './embedded-s3-credentials.js';
export type { EmbeddedS3 } from './embedded-s3.js';
