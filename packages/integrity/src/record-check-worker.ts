/**
 * The integrity package's check worker (see RecordCheckPool): checks records given as values
 * (`{ records }`) or as the JSON lines a node pages its log in (`{ jsonLines }`).
 */
import type { IntegrityCheckJob } from './record-check-pool.js';
import { parseRecordLines, serveRecordChecks } from './record-check-service.js';

serveRecordChecks((job) => {
  const given = job as IntegrityCheckJob;
  return { records: 'records' in given ? given.records : parseRecordLines(given.jsonLines) };
});
