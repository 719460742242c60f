import type { IncomingHttpHeaders } from 'node:http';
import type { RequestTarget } from './request-target.js';
import { S3Failure } from './s3-failure.js';

/** The S3 operations this endpoint serves; everything else is refused before it reaches storage. */
export type S3OperationName =
  | 'ListBuckets'
  | 'HeadBucket'
  | 'GetBucketLocation'
  | 'ListObjects'
  | 'ListObjectsV2'
  | 'DeleteObjects'
  | 'GetObject'
  | 'HeadObject'
  | 'PutObject'
  | 'DeleteObject';

export interface S3Operation {
  name: S3OperationName;
  bucket: string | undefined;
  key: string | undefined;
  /** The query parameters the operation reads, without any that carried the signature. */
  params: Map<string, string>;
}

export const SUPPORTED_OPERATIONS = 'GetObject, HeadObject, PutObject (If-None-Match: * honoured), DeleteObject, DeleteObjects, ListObjects, ListObjectsV2, HeadBucket, GetBucketLocation and ListBuckets';

const LISTING_PARAMS = ['list-type', 'prefix', 'delimiter', 'max-keys', 'continuation-token', 'start-after', 'fetch-owner', 'encoding-type', 'marker'];
const READ_PARAMS = ['response-content-type', 'response-content-language', 'response-expires', 'response-cache-control', 'response-content-disposition', 'response-content-encoding'];

function notServed(what: string): S3Failure {
  return new S3Failure(501, 'NotImplemented', `${what} is not served by this endpoint; it serves ${SUPPORTED_OPERATIONS}`);
}

/**
 * Names the operation a request asks for, accepting only the query parameters that operation
 * reads (plus `x-id`, which AWS SDKs add). Being strict here means the request s3rver serves
 * is exactly the one that was checked: no sub-resource (`?acl`, `?uploads`, …) or copy header
 * can turn a checked read into something else.
 */
export function classifyOperation(method: string, target: RequestTarget, headers: IncomingHttpHeaders, signatureParams: ReadonlySet<string>): S3Operation {
  const params = new Map<string, string>();
  for (const [name, value] of target.query) {
    if (signatureParams.has(name) || name === 'x-id') continue;
    params.set(name, value);
  }
  const only = (allowed: readonly string[]) => {
    for (const name of params.keys()) if (!allowed.includes(name)) throw notServed(`the query parameter '${name}' on ${method}`);
  };
  const operation = (name: S3OperationName): S3Operation => ({ name, bucket: target.bucket, key: target.key, params });

  if (target.bucket === undefined) {
    if (method !== 'GET') throw notServed(`${method} /`);
    only([]);
    return operation('ListBuckets');
  }
  if (target.key === undefined) {
    if (method === 'HEAD') {
      only([]);
      return operation('HeadBucket');
    }
    if (method === 'GET' && params.has('location')) {
      only(['location']);
      return operation('GetBucketLocation');
    }
    if (method === 'GET') {
      only(LISTING_PARAMS);
      return operation(params.get('list-type') === '2' ? 'ListObjectsV2' : 'ListObjects');
    }
    if (method === 'POST' && params.has('delete')) {
      only(['delete']);
      return operation('DeleteObjects');
    }
    throw notServed(`${method} on a bucket`);
  }
  switch (method) {
    case 'GET':
    case 'HEAD':
      only(READ_PARAMS);
      return operation(method === 'GET' ? 'GetObject' : 'HeadObject');
    case 'PUT':
      only([]);
      if (headers['x-amz-copy-source'] !== undefined) throw notServed('CopyObject');
      return operation('PutObject');
    case 'DELETE':
      only([]);
      return operation('DeleteObject');
    default:
      throw notServed(`${method} on an object`);
  }
}
