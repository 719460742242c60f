export * from './audit-columns.js';
export * from './byte-source.js';
export * from './parquet-schema.js';
export * from './parquet-writer.js';
export * from './parquet-reader.js';
