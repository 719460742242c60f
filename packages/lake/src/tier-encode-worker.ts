/**
 * A tier encoder worker: encodes and rewrites tier files off the event loop (see
 * TierEncodePool). Every job is answered, failures included; the files' bytes are transferred.
 */
import { parentPort } from 'node:worker_threads';
import { isAuditError } from '@auditlake/model';
import type { TierEncodeRequest, TierEncodeResponse } from './tier-encode-pool.js';
import { encodeTierFile, rewriteTierFiles, type EncodedTierFile } from './tier-file-encoding.js';

const port = parentPort;
if (port === null) throw new Error('tier-encode-worker must run in a worker thread');

async function run(request: TierEncodeRequest): Promise<EncodedTierFile[]> {
  if (request.job === 'encode') return [encodeTierFile(request.events, request.shape)];
  return rewriteTierFiles(request.inputs, request.rowsPerFile, request.shape);
}

port.on('message', (request: TierEncodeRequest) => {
  void run(request).then(
    (files) => {
      // Moved, not copied, where a file owns its whole buffer.
      const owned = (bytes: Uint8Array) => bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
      const sent = files.map((file) => (owned(file.bytes) ? file : { ...file, bytes: file.bytes.slice() }));
      const response: TierEncodeResponse = { id: request.id, files: sent };
      port.postMessage(response, [...new Set(sent.map((file) => file.bytes.buffer as ArrayBuffer))]);
    },
    (err: unknown) => {
      const response: TierEncodeResponse = {
        id: request.id,
        error: err instanceof Error ? err.message : String(err),
        ...(isAuditError(err) ? { code: err.code } : {}),
      };
      port.postMessage(response);
    },
  );
});
