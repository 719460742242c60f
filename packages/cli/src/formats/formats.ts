import { gravitinoFormat } from './gravitino-format.js';
import { lakekeeperFormat } from './lakekeeper-format.js';
import { lasFormat } from './las-format.js';
import { lhoFormat } from './lho-format.js';
import type { FormatName, RecordFormat } from './record-format.js';

/** Every format `auditlake import --format` reads, by name. */
export const RECORD_FORMATS: Readonly<Record<FormatName, RecordFormat>> = {
  gravitino: gravitinoFormat,
  lakekeeper: lakekeeperFormat,
  lho: lhoFormat,
  las: lasFormat,
};
