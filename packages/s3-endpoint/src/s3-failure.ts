import { randomBytes } from 'node:crypto';
import { xmlText } from './xml-text.js';

/**
 * A refused S3 request: the HTTP status and the S3 error code clients map to exceptions
 * (`AccessDenied`, `SignatureDoesNotMatch`, `PreconditionFailed`, …), with a message that says
 * what to do. It becomes an S3-style XML error body.
 */
export class S3Failure extends Error {
  readonly status: number;
  readonly s3Code: string;

  constructor(status: number, s3Code: string, message: string) {
    super(message);
    this.name = 'S3Failure';
    this.status = status;
    this.s3Code = s3Code;
  }
}

/** The XML body S3 sends with an error, which S3 clients parse into their exception. */
export function errorXml(failure: S3Failure, resource: string): string {
  const requestId = randomBytes(8).toString('hex').toUpperCase();
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<Error><Code>${xmlText(failure.s3Code)}</Code><Message>${xmlText(failure.message)}</Message>` +
    `<Resource>${xmlText(resource)}</Resource><RequestId>${requestId}</RequestId></Error>`
  );
}
