export { tempDir, type TempDir } from './temp-dir.js';
export { freePort } from './free-port.js';
export { startNodeProcess, auditlakeBin, RECOMMENDED_NODE_ENV, type NodeProcess, type NodeProcessOptions } from './node-process.js';
export { createEventGenerator, mulberry32, type EventGenerator, type EventGeneratorOptions, type GeneratedEvent } from './event-generator.js';
export { startRedis, type RedisOptions, type RedisServer } from './redis-server.js';
