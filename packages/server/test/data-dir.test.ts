// Goal: a node's data directory is created readable by its owner only (it holds every event, the LevelDB and S3 files made with the usual 0644, the node's keys and tokens); an existing directory others can read is left as it is, with a warning naming it and its mode.
import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareDataDir } from '../src/data-dir.js';
import { startTestNode } from './test-node.js';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'auditlake-data-dir-'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

describe('the data directory', () => {
  it('a node started on a new path creates it for its owner only, and its store beneath it', async () => {
    const dataDir = join(root, 'new', 'node');
    await startTestNode({ dataDir });
    expect(await modeOf(dataDir)).toBe(0o700);
    expect((await stat(join(dataDir, 'store'))).isDirectory()).toBe(true);
  });

  it('an existing directory others can read is kept as the operator made it, with a warning naming it and its mode', async () => {
    const dataDir = join(root, 'shared');
    await prepareDataDir(dataDir, () => undefined);
    await chmod(dataDir, 0o755);
    const warnings: string[] = [];
    await prepareDataDir(dataDir, (message) => warnings.push(message));
    expect(await modeOf(dataDir)).toBe(0o755);
    expect(warnings).toEqual([`the data directory ${dataDir} can be read by other users (mode 0755): it holds every stored event and the node's keys; chmod 700 it unless something else must read it`]);
  });

  it('an existing directory of its owner only gives no warning', async () => {
    const dataDir = join(root, 'private');
    const warnings: string[] = [];
    await prepareDataDir(dataDir, (message) => warnings.push(message));
    await prepareDataDir(dataDir, (message) => warnings.push(message));
    expect(await modeOf(dataDir)).toBe(0o700);
    expect(warnings).toEqual([]);
  });
});
