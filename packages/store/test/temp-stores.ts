// Stores in temp dirs for one test file: opened by the tests, closed and removed after each test.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { AuditStore, type AuditStoreOptions } from '../src/audit-store.js';

export interface TempStores {
  /** Opens a store at `location`, or in a new temp dir removed after the test. */
  open: (location?: string, now?: () => number, options?: Partial<AuditStoreOptions>) => Promise<{ store: AuditStore; location: string }>;
  /** Closes a store before the test ends (to reopen its location). */
  close: (store: AuditStore) => Promise<void>;
}

/** `defaults`: options every store of the file is opened with (a test's own options win). */
export function useTempStores(prefix: string, defaults: Partial<AuditStoreOptions> = {}): TempStores {
  const dirs: string[] = [];
  const stores: AuditStore[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });
  return {
    open: async (location, now, options = {}) => {
      const where = location ?? (await mkdtemp(join(tmpdir(), prefix)));
      if (location === undefined) dirs.push(where);
      const store = await AuditStore.open({ location: where, sequencer: () => 1, ...defaults, ...(now ? { now } : {}), ...options });
      stores.push(store);
      return { store, location: where };
    },
    close: async (store) => {
      await store.close();
      stores.splice(stores.indexOf(store), 1);
    },
  };
}
