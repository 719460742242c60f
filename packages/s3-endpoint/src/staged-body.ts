import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { UNSIGNED_PAYLOAD } from './request-signature.js';
import { S3Failure } from './s3-failure.js';

/** A request body written to a file of its own, checked against what the client declared. */
export interface StagedBody {
  path: string;
  bytes: number;
  md5Hex: string;
  /** Removes the file unless it was moved into place; idempotent. */
  discard(): Promise<void>;
}

/**
 * Streams a body to a new file under `directory` while hashing it, and refuses it (deleting
 * the file) when its length is not `Content-Length` or its SHA-256 is not the signed
 * `x-amz-content-sha256`. Nothing unverified ever reaches the bucket: the caller moves the
 * file into place only after this resolves.
 */
export async function stageBody(req: IncomingMessage, directory: string, payloadHash: string, bytesMax: number): Promise<StagedBody> {
  const declared = req.headers['content-length'];
  if (req.headers['transfer-encoding'] !== undefined || declared === undefined || !/^\d+$/.test(declared)) {
    throw new S3Failure(411, 'MissingContentLength', 'send the body with a Content-Length header (chunked uploads are not supported)');
  }
  const expectedBytes = Number(declared);
  if (expectedBytes > bytesMax) throw new S3Failure(400, 'EntityTooLarge', `the body is larger than this endpoint accepts (${bytesMax} bytes)`);
  const path = join(directory, `${Date.now()}-${randomBytes(8).toString('hex')}`);
  const sha256 = createHash('sha256');
  const md5 = createHash('md5');
  let bytes = 0;
  const discard = () => rm(path, { force: true });
  try {
    await pipeline(
      req,
      new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          bytes += chunk.length;
          if (bytes > expectedBytes) return callback(new S3Failure(400, 'IncompleteBody', 'the body is longer than its Content-Length'));
          sha256.update(chunk);
          md5.update(chunk);
          callback(null, chunk);
        },
      }),
      createWriteStream(path, { flags: 'wx', mode: 0o600 }),
    );
    if (bytes !== expectedBytes) throw new S3Failure(400, 'IncompleteBody', `the body has ${bytes} bytes, not the ${expectedBytes} its Content-Length says`);
    if (payloadHash !== UNSIGNED_PAYLOAD && sha256.digest('hex') !== payloadHash) {
      throw new S3Failure(400, 'XAmzContentSHA256Mismatch', "the body's SHA-256 is not the signed x-amz-content-sha256");
    }
  } catch (err) {
    await discard();
    throw err;
  }
  return { path, bytes, md5Hex: md5.digest('hex'), discard };
}

/** Reads a small body (at most `bytesMax`) into memory, checked the same way. */
export async function readSmallBody(req: IncomingMessage, payloadHash: string, bytesMax: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > bytesMax) throw new S3Failure(400, 'MaxMessageLengthExceeded', `the request body is larger than ${bytesMax} bytes`);
    chunks.push(chunk);
  }
  const body = Buffer.concat(chunks);
  if (payloadHash !== UNSIGNED_PAYLOAD && createHash('sha256').update(body).digest('hex') !== payloadHash) {
    throw new S3Failure(400, 'XAmzContentSHA256Mismatch', "the body's SHA-256 is not the signed x-amz-content-sha256");
  }
  return body;
}
