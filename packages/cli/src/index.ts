export { runCli } from './cli.js';
export { parseStartOptions, type StartOptions } from './start-options.js';
export { verifyHistory } from './verify-command.js';
export { parseVerifyOptions, type VerifyOptions } from './verify-options.js';
