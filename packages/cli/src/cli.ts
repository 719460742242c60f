import { createRequire } from 'node:module';
import { isAuditError } from '@auditlake/model';
import { exportCommand } from './export-command.js';
import { EXPORT_USAGE } from './export-options.js';
import { IMPORT_USAGE } from './import-options.js';
import { importCommand } from './import-command.js';
import { START_USAGE } from './start-options.js';
import { VERIFY_USAGE } from './verify-options.js';

/** This package's version, as `auditlake --version` prints it. */
export function cliVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('../package.json') as { version: string }).version;
}

const USAGE = `auditlake — a replicated audit store for lakehouse platforms

usage: auditlake <command> [options]

commands:
  start        run a node (auditlake start --help describes every option)
  import       send other systems' audit logs to a node (auditlake import --help)
  export       write the whole matching log into one file: NDJSON, CSV, Arrow, Parquet or OCSF (auditlake export --help)
  verify       prove a node's log or a tier unaltered and complete (auditlake verify --help)

options:
  --version    print the version and exit
  --help, -h   print this help and exit

${START_USAGE}

${IMPORT_USAGE}

${EXPORT_USAGE}

${VERIFY_USAGE}`;

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
  // Only before `--`: what follows it is operands (a file may be named --help).
  const options = args.indexOf('--') === -1 ? args : args.slice(0, args.indexOf('--'));
  const wantsHelp = options.includes('--help') || options.includes('-h');
  if (command === 'import') {
    if (wantsHelp) {
      process.stdout.write(IMPORT_USAGE + '\n');
      return 0;
    }
    return importCommand(args, env, { stdout: process.stdout, stderr: process.stderr });
  }
  if (command === 'export') {
    if (wantsHelp) {
      process.stdout.write(EXPORT_USAGE + '\n');
      return 0;
    }
    return exportCommand(args, env, { stdout: process.stdout, stderr: process.stderr });
  }
  if (command === 'verify') {
    if (wantsHelp) {
      process.stdout.write(VERIFY_USAGE + '\n');
      return 0;
    }
    // Loaded only to verify: it reads Parquet and S3, which the other commands do not need.
    const { verifyCommand } = await import('./verify-command.js');
    return verifyCommand(args, env, { stdout: process.stdout, stderr: process.stderr });
  }
  if (command !== 'start') {
    process.stderr.write(`auditlake: unknown command: ${command}\n${USAGE}\n`);
    return 2;
  }
  if (wantsHelp) {
    process.stdout.write(START_USAGE + '\n');
    return 0;
  }
  try {
    // Loaded only to start a node: the other commands need none of the server's modules.
    const { startCommand } = await import('./start-command.js');
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
