export { runCli } from './cli.js';
export { parseStartOptions, type StartOptions } from './start-options.js';
