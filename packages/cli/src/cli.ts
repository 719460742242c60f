import { createRequire } from 'node:module';
import { isAuditError } from '@auditlake/model';
import { START_USAGE } from './start-options.js';
import { startCommand } from './start-command.js';

/** This package's version, as `auditlake --version` prints it. */
export function cliVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('../package.json') as { version: string }).version;
}

const USAGE = `auditlake — a replicated audit store for lakehouse platforms

usage: auditlake <command> [options]

commands:
  start        run a node (auditlake start --help describes every option)

options:
  --version    print the version and exit
  --help, -h   print this help and exit

${START_USAGE}`;

/** Runs the CLI; returns the process exit code for commands that finish. */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv): Promise<number | 'running'> {
  const [command, ...args] = argv;
  if (command === '--version' || command === '-v' || command === 'version') {
    process.stdout.write(`auditlake ${cliVersion()}\n`);
    return 0;
  }
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE + '\n');
    return command === undefined ? 2 : 0;
  }
  if (command !== 'start') {
    process.stderr.write(`auditlake: unknown command: ${command}\n${USAGE}\n`);
    return 2;
  }
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(START_USAGE + '\n');
    return 0;
  }
  try {
    await startCommand(args, env);
    return 'running';
  } catch (err) {
    if (isAuditError(err)) {
      process.stderr.write(`auditlake: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
}
