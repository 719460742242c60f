/**
 * Worker thread of {@link TextProbePool}: runs the free-text prefilter (decompress, fold,
 * search) over column chunks it is sent, so the searching uses another core than the one
 * doing the I/O. Stateless; one request at a time, answered in order.
 */
import { parentPort } from 'node:worker_threads';
import { columnChunkMayContain } from './column-text-probe.js';
import type { TextProbeRequest, TextProbeResponse } from './text-probe-pool.js';

const port = parentPort;
if (port === null) throw new Error('text-probe-worker must run in a worker thread');
port.on('message', (request: TextProbeRequest) => {
  let response: TextProbeResponse;
  try {
    const span = new Uint8Array(request.span);
    const mayMatch = request.groups.map((chunks) => chunks.some((c) => columnChunkMayContain(span.subarray(c.start, c.end), c.meta, request.needle)));
    response = { id: request.id, mayMatch };
  } catch (err) {
    response = { id: request.id, error: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(response);
});
