// Where `serve --recover` keeps a damaged history.db and its WAL while it rebuilds the file, and how a
// rebuild cut short (a kill -9, a failure) is undone, so that a crash at any point leaves the two as they
// were before it: the next start refuses them as before, and the next --recover salvages them again.
// docs/design.md, "Salvage in one directory (s16, mend16)".
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, renameSync, rmSync, truncateSync } from 'node:fs';
import path from 'node:path';
import { PRIVATE_FILE_MODE } from '../../platform/file-modes';

/**
 * Test-only fault points of the salvage (test/store/history-damage.test.ts): the process kills itself
 * with SIGKILL at the named point. Read here only; never set in production.
 */
export const SALVAGE_FAULT_ENV = 'RA_TEST_FAULT_SALVAGE';

export type SalvageFault = 'after-first-move' | 'after-moves' | 'after-fill';

export function salvageFault(point: SalvageFault): void {
  if (process.env[SALVAGE_FAULT_ENV] === point) process.kill(process.pid, 'SIGKILL');
}

/** The directory a salvage of `file` moves it and its WAL into while it runs (renamed to `keepAside`'s once done). */
function salvagingDir(file: string): string {
  return `${file}.salvaging`;
}

/** Where the damaged file is in the directory of a salvage running (or cut short); its WAL at that + `-wal`. */
function movedFile(file: string): string {
  return path.join(salvagingDir(file), path.basename(file));
}

/** SQLite's files beside a database: its WAL, shared memory and rollback journal. */
const SIDE_FILES = ['-wal', '-shm', '-journal'];

/**
 * Moves history.db (`file`, closed) and its WAL into a new directory `<file>.salvaging`, under the same
 * names: the WAL first, so that wherever a crash stops this, `undoSalvage` knows which WAL is whose (the
 * file still outside: its WAL is inside or there was none; the file inside: a file and WAL outside are
 * the rebuild's). Answers the file's path there.
 */
export function moveIntoSalvage(file: string): string {
  mkdirSync(salvagingDir(file), { mode: 0o700 });
  const moved = movedFile(file);
  if (existsSync(`${file}-wal`)) {
    renameSync(`${file}-wal`, `${moved}-wal`);
    salvageFault('after-first-move');
  }
  renameSync(file, moved);
  salvageFault('after-moves');
  return moved;
}

/**
 * A copy to read of the moved file when it is empty while its WAL holds commits of a database `bytes`
 * long (integrity.ts Cut): zeros that long (every page the WAL holds is read from there, page 1 included)
 * with the WAL copied beside them, so that SQLite opens the WAL rather than deleting it, and the file
 * kept aside stays as it was (empty). Answers the file to read.
 */
export function readableCopy(moved: string, bytes: number): string {
  const copy = path.join(path.dirname(moved), 'read');
  closeSync(openSync(copy, 'w', PRIVATE_FILE_MODE));
  truncateSync(copy, bytes);
  copyFileSync(`${moved}-wal`, `${copy}-wal`);
  return copy;
}

/**
 * Ends a salvage of `file` whose rebuild is whole: the directory holding the damaged file and its WAL
 * (as they were) is renamed `<file>.damaged-<time>`, a read copy removed. Answers that directory.
 */
export function keepAside(file: string): string {
  const moving = salvagingDir(file);
  const copy = path.join(moving, 'read');
  for (const suffix of ['', ...SIDE_FILES]) rmSync(`${copy}${suffix}`, { force: true });
  rmSync(`${copy}.lock`, { recursive: true, force: true });
  const aside = `${file}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  renameSync(moving, aside);
  return aside;
}

/** What an open that undid a salvage cut short says (with its refusal, or in the log: history.salvage_undone). */
export const SALVAGE_UNDONE = 'a salvage by serve --recover was cut short before it ended: history.db and its WAL were moved back as they were before it, and its partial rebuild removed';

/**
 * Undoes a salvage of `file` cut short (a crash, a failure before `keepAside`): a rebuild there is
 * removed, the damaged file and its WAL moved back, the directory removed; a crash during this is undone
 * by the next call the same way. Run at every open before anything else (history-worker.ts), and by a
 * salvage that fails. Answers whether there was one to undo.
 */
export function undoSalvage(file: string): boolean {
  const moving = salvagingDir(file);
  if (!existsSync(moving)) return false;
  const moved = movedFile(file);
  if (existsSync(moved)) {
    // Moved in after its WAL: what is at `file` now is the rebuild, cut short with the salvage.
    for (const suffix of ['', ...SIDE_FILES]) rmSync(`${file}${suffix}`, { force: true });
    rmSync(`${file}.lock`, { recursive: true, force: true });
    renameSync(moved, file);
  }
  if (existsSync(`${moved}-wal`)) renameSync(`${moved}-wal`, `${file}-wal`);
  rmSync(moving, { recursive: true, force: true });
  return true;
}
