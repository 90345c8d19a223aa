import { randomUUID } from 'node:crypto';
import { lstat, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log/logger';
import type { Store } from '../store';
import { hashBytes } from '../store/blob-store';
import { openForReading, writeFileInWorkspace } from './tools/anchored-fs';
import { formatBytes } from './tools/text-files';
import type { FileWriter } from './tools/types';
import type { WorkspacePath } from './tools/workspace';

/** A file bigger than this is overwritten without a before-image: the write is listed as not reversible. */
export const BEFORE_IMAGE_MAX_BYTES = 64 * 1024 * 1024;

/**
 * Test-only fault points of the write step (test/agent/turn-undo.test.ts): the process kills itself
 * with SIGKILL at the named point, to show that a crash anywhere leaves the write and its record both
 * or neither. Read here only; never set in production.
 */
export const FAULT_ENV = 'RA_TEST_FAULT_FILE_CHANGE';

function faultPoint(name: 'after-blobs' | 'after-pending' | 'after-write'): void {
  if (process.env[FAULT_ENV] === name) process.kill(process.pid, 'SIGKILL');
}

type BeforeImage = { kind: 'absent' } | { kind: 'bytes'; bytes: Buffer } | { kind: 'unkept'; why: string };

/** What is at `target` now, as undo would need it back. */
async function beforeImage(target: WorkspacePath, shown: string): Promise<BeforeImage> {
  let info;
  try {
    info = await lstat(target.path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'absent' };
    throw error;
  }
  // A folder: the write refuses it with its own words, and nothing is recorded.
  if (info.isDirectory()) return { kind: 'absent' };
  if (info.isSymbolicLink()) return { kind: 'unkept', why: 'a symbolic link was replaced by a file' };
  if (!info.isFile()) return { kind: 'unkept', why: 'a special file was replaced' };
  if (info.size > BEFORE_IMAGE_MAX_BYTES) return { kind: 'unkept', why: `its previous content (${formatBytes(info.size)}) was too big to keep` };
  const handle = await openForReading(target, shown);
  try {
    return { kind: 'bytes', bytes: await handle.readFile() };
  } finally {
    await handle.close();
  }
}

/**
 * A turn's file writes, each recorded for undo_turn in the same step as the write, ordered so that a
 * kill -9 anywhere leaves the write and its record both or neither: the before-image and the new bytes
 * are put in the blob store (durable when put resolves), a `pending` row is journaled (fsynced), the
 * file is written atomically, the row becomes `done`. A crash between the row and `done` is settled at
 * the next start by looking at the file (settlePendingFileChanges).
 */
export class TurnFiles implements FileWriter {
  /** Writes asked this turn (turn.ended's `files_written`: 0 tells a page there is no Undo to offer). */
  written = 0;
  /** A write or a tool whose effects are not recorded ran: files (an instruction file too) may differ from the turn's start. */
  changed = false;

  constructor(
    private readonly store: Pick<Store, 'fileChanges' | 'blobs'>,
    private readonly conversationId: string,
    private readonly turnId: string,
    /** Files of the workspace may have changed (a write, or a tool whose effects are not recorded). */
    private readonly onChange: () => void = () => undefined,
  ) {}

  async write(tool: string, target: WorkspacePath, shown: string, content: string, createParents: boolean): Promise<{ existed: boolean }> {
    this.written += 1;
    this.changed = true;
    this.onChange();
    const before = await beforeImage(target, shown);
    if (before.kind === 'unkept') {
      await this.unrecorded(tool, `${tool} ${target.relative}: ${before.why}`);
      return writeFileInWorkspace(target, shown, content, createParents);
    }
    const id = randomUUID();
    // Held from blob collection until the row naming them is journaled (blob-guard.ts).
    await this.store.blobs.holding(async (put) => {
      const beforeHash = before.kind === 'bytes' ? (await put(before.bytes)).hash : null;
      const afterHash = (await put(content)).hash;
      faultPoint('after-blobs');
      await this.store.fileChanges.begin({
        id,
        conversation_id: this.conversationId,
        turn_id: this.turnId,
        tool,
        root: target.root,
        path: target.relative,
        before_hash: beforeHash,
        after_hash: afterHash,
      });
    });
    faultPoint('after-pending');
    let written: { existed: boolean };
    try {
      written = await writeFileInWorkspace(target, shown, content, createParents);
    } catch (error) {
      // The write is atomic: it failed whole, so the file is as before and the record goes.
      await this.store.fileChanges.drop(id);
      throw error;
    }
    faultPoint('after-write');
    await this.store.fileChanges.settle(id, 'done');
    return written;
  }

  /** A call of a tool whose effects are not recorded (run_command...), listed as not reversible. */
  async unrecorded(tool: string, detail: string): Promise<void> {
    this.changed = true;
    this.onChange();
    await this.store.fileChanges.recordUnrecorded({ id: randomUUID(), conversation_id: this.conversationId, turn_id: this.turnId, tool, detail });
  }
}

/** The SHA-256 of the file at `full` now, null when there is none (a symbolic link or folder counts as "something else"). */
export async function currentHash(full: string): Promise<string | null> {
  try {
    const info = await lstat(full);
    if (!info.isFile()) return `not-a-file:${info.mode}`;
    return hashBytes(await readFile(full));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}

/**
 * Writes a crash left `pending`, settled by looking at the file: it holds the new bytes (the write
 * happened: `done`), the old (it did not: the record goes), or neither (someone changed it since:
 * `changed`, so undo never overwrites it). Run at start, before any turn.
 */
export async function settlePendingFileChanges(store: Pick<Store, 'fileChanges'>, logger: Logger): Promise<void> {
  for (const row of store.fileChanges.pending()) {
    const now = await currentHash(path.join(row.root ?? '', row.path ?? '')).catch(() => 'unreadable');
    if (now === row.after_hash) await store.fileChanges.settle(row.id, 'done');
    else if (now === row.before_hash) await store.fileChanges.drop(row.id);
    else await store.fileChanges.settle(row.id, 'changed');
    logger.info('undo.settled', { tool: row.tool, outcome: now === row.after_hash ? 'written' : now === row.before_hash ? 'not_written' : 'changed' });
  }
}
