/** A worker thread of `auditlake verify` (see VerifyChecks): decodes and checks one job at a time. */
import { serveRecordChecks } from '@auditlake/integrity';
import { readVerifyJob, type VerifyCheckJob } from './verify-checks.js';

serveRecordChecks((job) => readVerifyJob(job as VerifyCheckJob));
