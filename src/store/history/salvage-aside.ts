// Where `serve --recover` keeps a damaged history.db and its WAL while it rebuilds the file, and how a
// rebuild cut short (a kill -9, a failure) is undone, so that a crash at any point leaves the two as they
// were before it: the next start refuses them as before, and the next --recover salvages them again.
// docs/design.md, "Salvage in one directory (s16, mend16)".
import { closeSync, constants, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, truncateSync, writeSync } from 'node:fs';
import path from 'node:path';
import { syncDirectorySync } from '../../platform/directory-sync';
import { PRIVATE_FILE_MODE } from '../../platform/file-modes';

/**
 * Test-only fault points of the salvage (test/store/history-damage.test.ts): the process kills itself
 * with SIGKILL at the named point. Read here only; never set in production.
 */
export const SALVAGE_FAULT_ENV = 'RA_TEST_FAULT_SALVAGE';

export type SalvageFault = 'after-first-move' | 'after-moves' | 'after-fill' | 'in-aside';

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
 * A rename made durable before anything goes on: both directories' entries fsynced. Each step of a
 * salvage (and of its undo) relies on the one before it being on disk, not only in the page cache: a
 * power cut that kept a later rename and lost an earlier one would leave a state `undoSalvage` reads
 * wrongly (a damaged file's WAL taken for the rebuild's and removed; a rebuild others were told about
 * removed as one cut short). docs/design.md, "Trust, round three's leftovers (s20, fix20b)".
 */
function renameDurably(from: string, to: string): void {
  renameSync(from, to);
  syncDirectorySync(path.dirname(to));
  if (path.dirname(from) !== path.dirname(to)) syncDirectorySync(path.dirname(from));
}

/**
 * Moves history.db (`file`, closed) and its WAL into a new directory `<file>.salvaging`, under the same
 * names: the WAL first, so that wherever a crash stops this, `undoSalvage` knows which WAL is whose (the
 * file still outside: its WAL is inside or there was none; the file inside: a file and WAL outside are
 * the rebuild's). Answers the file's path there.
 */
export function moveIntoSalvage(file: string): string {
  mkdirSync(salvagingDir(file), { mode: 0o700 });
  syncDirectorySync(path.dirname(file));
  const moved = movedFile(file);
  if (existsSync(`${file}-wal`)) {
    renameDurably(`${file}-wal`, `${moved}-wal`);
    salvageFault('after-first-move');
  }
  renameDurably(file, moved);
  salvageFault('after-moves');
  return moved;
}

/** Where the salvage notes which file is its rebuild (its device and inode), so an undo removes only that. */
function rebuildIdFile(file: string): string {
  return path.join(salvagingDir(file), 'rebuild-id');
}

const identityOf = (file: string): string | undefined => {
  try {
    const { dev, ino } = statSync(file);
    return `${dev}:${ino}`;
  } catch {
    return undefined;
  }
};

/**
 * Creates the salvage's new, empty history.db at `file` (after `moveIntoSalvage`): made in the salvage's
 * directory, its identity noted there, then renamed into place, so that `undoSalvage` removes a file at
 * `file` only if it is this one (the same inode), never one something else wrote there since.
 */
export function createRebuild(file: string): void {
  const fresh = path.join(salvagingDir(file), 'rebuild');
  closeSync(openSync(fresh, 'wx', PRIVATE_FILE_MODE));
  // The note durable before the rebuild is in place: without it an undo would refuse to remove the rebuild.
  const note = openSync(rebuildIdFile(file), 'w', PRIVATE_FILE_MODE);
  try {
    writeSync(note, identityOf(fresh) ?? '');
    fsyncSync(note);
  } finally {
    closeSync(note);
  }
  // The note's entry too (review20b): renameDurably syncs the data directory first, and a power cut before
  // it syncs this one could keep the rebuild in place and lose the note.
  syncDirectorySync(salvagingDir(file));
  renameDurably(fresh, file);
}

/** The salvage's copies to read (readableCopy, copyWithFirstPage), in its directory: removed when it ends. */
const READ_COPIES = ['read', 'read-first-page'];

/**
 * A copy to read of the moved file when it is empty while its WAL holds commits of a database `bytes`
 * long (integrity.ts Cut): zeros that long (every page the WAL holds is read from there, page 1 included)
 * with the WAL copied beside them, so that SQLite opens the WAL rather than deleting it, and the file
 * kept aside stays as it was (empty). Answers the file to read.
 */
export function readableCopy(moved: string, bytes: number): string {
  const copy = path.join(path.dirname(moved), READ_COPIES[0]);
  closeSync(openSync(copy, 'w', PRIVATE_FILE_MODE));
  truncateSync(copy, bytes);
  copyFileSync(`${moved}-wal`, `${copy}-wal`);
  return copy;
}

/**
 * A copy to read of `damaged` (the moved file, or readableCopy's) whose page 1 SQLite cannot read (its
 * header, the schema's root), with `firstPage` in its place: a new history.db's page 1, the same tables at
 * the same root pages (HistoryDb's readableSource checks they are), its page count made the copy's own.
 * Its WAL copied beside it. Cloned where the file system can (copy on write), else copied whole: the
 * salvage then needs the file's size once more on the disk until it ends (keepAside removes it).
 * Answers the copy.
 */
export function copyWithFirstPage(damaged: string, firstPage: Buffer): string {
  const copy = path.join(path.dirname(damaged), READ_COPIES[1]);
  copyFileSync(damaged, copy, constants.COPYFILE_FICLONE);
  const page = Buffer.from(firstPage);
  // The page count is valid only with the change counter it was written with (equal in a new file's header).
  page.writeUInt32BE(Math.max(1, Math.floor(statSync(copy).size / page.length)), 28);
  const fd = openSync(copy, 'r+');
  try {
    writeSync(fd, page, 0, page.length, 0);
  } finally {
    closeSync(fd);
  }
  if (existsSync(`${damaged}-wal`)) copyFileSync(`${damaged}-wal`, `${copy}-wal`, constants.COPYFILE_FICLONE);
  return copy;
}

/**
 * Ends a salvage of `file` whose rebuild is whole: the directory holding the damaged file and its WAL
 * (as they were) is renamed `<file>.damaged-<time>` (durably: from then on the salvage is done, and its
 * rebuild is what later writes go to), then the salvage's own files there (a read copy, the rebuild's
 * note) removed. The rename first: a kill between removing the note and the rename left a directory
 * `undoSalvage` took for a rebuild written by someone else, and the next start was refused. Answers that
 * directory.
 */
export function keepAside(file: string): string {
  const aside = `${file}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  renameDurably(salvagingDir(file), aside);
  salvageFault('in-aside');
  for (const copy of READ_COPIES.map((name) => path.join(aside, name))) {
    for (const suffix of ['', ...SIDE_FILES]) rmSync(`${copy}${suffix}`, { force: true });
    rmSync(`${copy}.lock`, { recursive: true, force: true });
  }
  rmSync(path.join(aside, path.basename(rebuildIdFile(file))), { force: true });
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
  const notOurs = (what: string) =>
    new Error(
      `${moving} holds what a salvage by serve --recover cut short had moved aside, but ${what} was written since by something else (another version, or by hand): nothing was moved or removed. Keep the one that is right: move ${path.basename(moving)} out of the data directory to open ${path.basename(file)} as it is`,
    );
  if (existsSync(moved)) {
    // Moved in after its WAL: a file at `file` now is the rebuild, cut short with the salvage, if it is
    // the one the salvage made (createRebuild); anything else there is not the salvage's to remove.
    const outside = identityOf(file);
    if (outside !== undefined && outside !== readNote(rebuildIdFile(file))) throw notOurs(path.basename(file));
    for (const suffix of ['', ...SIDE_FILES]) rmSync(`${file}${suffix}`, { force: true });
    rmSync(`${file}.lock`, { recursive: true, force: true });
    renameDurably(moved, file);
  }
  if (existsSync(`${moved}-wal`)) {
    if (existsSync(`${file}-wal`)) throw notOurs(`${path.basename(file)}-wal`);
    renameDurably(`${moved}-wal`, `${file}-wal`);
  }
  // Both back durably (renameDurably) before the directory that held them goes.
  rmSync(moving, { recursive: true, force: true });
  syncDirectorySync(path.dirname(file));
  return true;
}

function readNote(note: string): string | undefined {
  try {
    return readFileSync(note, 'utf8') || undefined;
  } catch {
    return undefined;
  }
}
