import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { LogFields, Logger } from '../../src/log/logger';
import { Database } from '../../src/store/database';
import type { Store } from '../../src/store';

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  event: string;
  fields: LogFields;
}

/** A logger that keeps every line, for assertions. */
export function captureLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const make = (base: LogFields): Logger => ({
    debug: (event, fields) => lines.push({ level: 'debug', event, fields: { ...base, ...fields } }),
    info: (event, fields) => lines.push({ level: 'info', event, fields: { ...base, ...fields } }),
    warn: (event, fields) => lines.push({ level: 'warn', event, fields: { ...base, ...fields } }),
    error: (event, fields) => lines.push({ level: 'error', event, fields: { ...base, ...fields } }),
    child: (fields) => make({ ...base, ...fields }),
  });
  return { logger: make({}), lines };
}

export async function tempDir(prefix = 'store-test-'): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  // Retried: a store closed by a later after-hook may still be writing (history maintenance) meanwhile.
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true, maxRetries: 10 }) };
}

/** A temp directory removed when the test `t` ends. */
export async function testDir(t: { after: (fn: () => Promise<void>) => void }, prefix?: string): Promise<string> {
  const { dir, cleanup } = await tempDir(prefix);
  t.after(cleanup);
  return dir;
}

const CHILD = path.join(__dirname, 'store-child.ts');

export interface StoreChild {
  proc: ChildProcessWithoutNullStreams;
  /** Complete stdout lines so far. */
  lines: string[];
  stderr: () => string;
  /** Resolves when a line satisfies `pred` (rejects on exit or after `ms`). */
  waitFor(pred: (lines: string[]) => boolean, ms?: number): Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** The blobs store-child.ts `collect` stores: of conversation 'gone' alone, of 'kept' alone, and written by both. */
export const COLLECT_BYTES = { gone: ['gone attachment', 'gone before'], kept: ['kept attachment', 'kept before'], shared: ['written by both'] };

/** How many other ids store-child.ts `held-collect` holds (more than SQLite takes variables). */
export const HELD_MANY = 40_000;

/** The attachments' rows and uses, in order (store-child.ts `held-collect` prints them). */
export const heldRows = (db: Pick<Database, 'all'>) => ({
  attachments: db.all<{ id: string; conversation_id: string | null }>('SELECT id, conversation_id FROM attachments ORDER BY id'),
  uses: db.all<{ attachment_id: string; conversation_id: string }>('SELECT attachment_id, conversation_id FROM attachment_uses ORDER BY attachment_id, conversation_id'),
});

/** Starts test/helpers/store-child.ts in a real child process (node --import tsx). */
export function spawnStoreChild(
  mode: 'hold' | 'recover' | 'collect' | 'held-collect' | 'writer' | 'bulky' | 'bulky-segments' | 'maintain' | 'retire' | 'blobs' | 'cool' | 'cut-owed' | 'cut-cold',
  dir: string,
  env: NodeJS.ProcessEnv = {},
): StoreChild {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, mode, dir], {
    cwd: path.join(__dirname, '..', '..'),
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let partial = '';
  let err = '';
  const listeners = new Set<() => void>();
  proc.stdout.setEncoding('utf8');
  proc.stdout.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
    for (const l of listeners) l();
  });
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.on('exit', (code, signal) => {
      for (const l of listeners) l();
      resolve({ code, signal });
    });
  });
  const waitFor = (pred: (lines: string[]) => boolean, ms = 20_000) =>
    new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      const check = () => {
        if (pred(lines)) {
          done();
          resolve();
        } else if (proc.exitCode !== null || proc.signalCode !== null) {
          done();
          reject(new Error(`child exited early (${proc.exitCode ?? proc.signalCode}): ${err}`));
        }
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`timed out waiting for the child; stderr: ${err}`));
      }, ms);
      listeners.add(check);
      check();
    });
  return { proc, lines, stderr: () => err, waitFor, exited };
}

/** The tool output store-child.ts `cut-owed` and `cut-cold` store (its put refused) and retention cuts. */
export const CUT_OUTPUT = 'CUTME ' + 'o'.repeat(8_000);

/** The clock of retention in the store children and history tests. */
export const BULKY_NOW = Date.UTC(2024, 6, 1);

/** A message body of 8-60 KB, different for each i, that the test can recompute to compare byte for byte. */
export function bulkyContent(i: number): string {
  const line = `message ${i}: ${'abcdefghij'.repeat(5 + (i % 7))}\n`;
  return line.repeat(Math.ceil((8_000 + ((i * 7919) % 52_000)) / line.length));
}

/** A store in `dir` with one table `t (v TEXT)`, for the journal's write tests. */
export async function openTable(dir: string, segmentBytes?: number): Promise<Database> {
  const db = await Database.open(dir, { segmentBytes });
  await db.write((tx) => tx.run('CREATE TABLE IF NOT EXISTS t (v TEXT)'));
  return db;
}

/** `t`'s values in the order written. */
export const tableValues = (db: Database) => db.all<{ v: string }>('SELECT v FROM t ORDER BY rowid').map((r) => r.v);

/** Retention retires the conversation now: it is made idle since 2001, one maintenance pass runs with a 365-day window, then the window goes. */
export async function retireNow(store: Pick<Store, 'conversations' | 'maintenance'>, conversationId: string): Promise<void> {
  assert.equal(await store.conversations.touch(conversationId, '2001-01-01T00:00:00.000Z'), true);
  store.maintenance.setPolicy({ maxDays: 365 });
  try {
    await store.maintenance.run();
  } finally {
    store.maintenance.setPolicy({});
  }
  assert.equal(store.conversations.get(conversationId), undefined, 'retired');
}
