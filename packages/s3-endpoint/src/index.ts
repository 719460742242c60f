export { startS3Endpoint, endpointUrl, OBJECT_BYTES_MAX, type S3Endpoint, type S3EndpointOptions } from './s3-endpoint.js';
export { verifySignature, SIGNATURE_SKEW_MS_MAX, type S3Credentials, type VerifiedSignature } from './request-signature.js';
export { objectKeyProblem, OBJECT_KEY_BYTES_MAX, KEY_SEGMENT_BYTES_MAX } from './object-key.js';
export { bucketNameProblem } from './bucket-name.js';
export { compareKeys, LISTING_KEYS_MAX } from './bucket-listing.js';
export { signedFetch, type SignedFetchOptions } from './signed-fetch.js';
export { SUPPORTED_OPERATIONS } from './s3-operation.js';
