export * from './record-fields.js';
export * from './record-hasher.js';
export * from './stored-event-text.js';
export * from './checkpoint.js';
export * from './node-key.js';
export * from './integrity-events.js';
export * from './chain-verifier.js';
export * from './record-erasure.js';
