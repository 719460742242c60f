/**
 * An ingest parse worker: parses and validates request bodies off the event loop (see
 * IngestParsePool). Every message is answered, refusals included; only a bug throws.
 */
import { parentPort } from 'node:worker_threads';
import { encodeParsedEvents, parseIngestBody, transferable } from './ingest-parse.js';
import type { ParseRequest, ParseResponse } from './ingest-parse-pool.js';

const port = parentPort;
if (port === null) throw new Error('ingest-parse-worker must run in a worker thread');

port.on('message', (request: ParseRequest) => {
  let response: ParseResponse;
  try {
    const outcome = parseIngestBody(new Uint8Array(request.body), request.nowMs, request.redactKeys, request.chain, request.sourceBinding, request.latestMs);
    if (outcome.ok) {
      response = { id: request.id, events: transferable(encodeParsedEvents(outcome.events)) };
      port.postMessage(response, [response.events]);
      return;
    }
    response = { id: request.id, refusal: { code: outcome.code, message: outcome.message, refused: outcome.refused } };
  } catch (err) {
    response = { id: request.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  }
  port.postMessage(response);
});
