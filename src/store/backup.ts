// Backup and restore of a data directory (README, "Backup and restore"). A backup is a directory: the
// store's files, each one consistent file (Store.backup), the data directory's other files
// (service.json, vapid.json, blobs/ ...) copied as they are, and backup.json written last, so a
// directory without it is an unfinished backup.
import { mkdir, readdir, readFile, realpath, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { PRIVATE_DIR_MODE } from '../platform/file-modes';
import { acquireLock, LOCK_FILE_NAME } from '../platform/lock-file';
import { ADDRESS_FILE_NAME, DATABASE_FILE_NAME, EDITOR_HOST_FILE_NAME, LOG_FILE_NAME } from '../platform/paths';
import { nullLogger, type Logger } from '../log/logger';
import { copyDurably, writeDurably } from './backup-files';
import { fsyncDir } from './replay';
import type { Store } from './index';

export const BACKUP_MANIFEST = 'backup.json';
const BACKUP_FORMAT = 'remote-assistant.backup';
const BACKUP_VERSION = 1;

interface Manifest {
  format: typeof BACKUP_FORMAT;
  version: number;
  created_at: string;
  /** Every file of the backup, relative to it, `/`-separated (the manifest itself not included). */
  files: string[];
}

/**
 * Not copied from the data directory: the store's own files (Store.backup writes them whole; a
 * database file copied while it is written would be torn), the lock, the log, the notes of which
 * process listens where, temp files. Everything else is the user's data: service.json, vapid.json, blobs/.
 */
function isCopiedAsIs(name: string): boolean {
  if (name.startsWith(DATABASE_FILE_NAME) || name.startsWith('history.db')) return false;
  if (name.startsWith(LOCK_FILE_NAME) || name.endsWith('.lock') || name.startsWith(LOG_FILE_NAME)) return false;
  if (name === EDITOR_HOST_FILE_NAME || name === ADDRESS_FILE_NAME || name.endsWith('.tmp') || name.startsWith('.')) return false;
  return true;
}

async function copyTree(from: string, to: string, relative: string, files: string[]): Promise<void> {
  const entries = await readdir(from, { withFileTypes: true });
  for (const entry of entries) {
    const source = path.join(from, entry.name);
    const target = path.join(to, entry.name);
    const name = relative ? `${relative}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      await mkdir(target, { mode: PRIVATE_DIR_MODE });
      await copyTree(source, target, name, files);
      await fsyncDir(target);
    } else if (entry.isFile()) {
      await copyDurably(source, target);
      files.push(name);
    }
  }
}

const isInside = (child: string, parent: string) => {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

/**
 * Where `p` really is: symbolic links resolved, for a directory not made yet those of its nearest
 * existing parent (the rest appended), so a path through a link to the data directory is seen as inside it.
 */
async function realPathOf(p: string): Promise<string> {
  const rest: string[] = [];
  let at = path.resolve(p);
  for (;;) {
    try {
      return path.join(await realpath(at), ...rest);
    } catch (error) {
      const parent = path.dirname(at);
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || parent === at) throw error;
      rest.unshift(path.basename(at));
      at = parent;
    }
  }
}

/** Refuses a backup directory inside the data directory or holding it, comparing real paths. */
async function checkOutside(target: string, dataDir: string): Promise<void> {
  const [realTarget, realData] = await Promise.all([realPathOf(target), realPathOf(dataDir)]);
  if (isInside(realTarget, realData) || isInside(realData, realTarget)) {
    const via = realTarget === target ? '' : ` (really ${realTarget})`;
    throw new Error(`the backup directory ${target}${via} must be outside the data directory ${dataDir}`);
  }
}

/**
 * A new or empty directory to write into; anything else is refused, never overwritten. Returns how to
 * take back what a failed backup wrote: the directories this made, or the contents of the empty one given.
 */
async function emptyTarget(dir: string, what: string): Promise<() => Promise<void>> {
  const made = await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (made === undefined && (await readdir(dir)).length > 0) throw new Error(`${what} ${dir} is not empty: give a new or empty directory`);
  if (made !== undefined) return () => rm(made, { recursive: true, force: true });
  return async () => {
    for (const entry of await readdir(dir)) await rm(path.join(dir, entry), { recursive: true, force: true });
  };
}

/**
 * Writes a backup of the open store's data directory into `dest` (new or empty, outside the data
 * directory, symbolic links followed) while the service keeps running. Returns the files written,
 * relative to `dest`. A backup that fails leaves nothing behind of what it wrote.
 */
export async function backupDataDir(store: Store, dest: string): Promise<{ path: string; files: string[] }> {
  const dataDir = store.db.dir;
  const target = path.resolve(dest);
  await checkOutside(target, dataDir);
  const takeBack = await emptyTarget(target, 'the backup directory');
  try {
    // Again now that it exists: a link put in place meanwhile is seen too.
    await checkOutside(target, dataDir);
    const files = await writeBackup(store, dataDir, target);
    return { path: target, files };
  } catch (error) {
    await takeBack().catch(() => {});
    throw error;
  }
}

async function writeBackup(store: Store, dataDir: string, target: string): Promise<string[]> {
  // No blob is collected from the snapshot to the last blob copied: one the snapshot names stays to be copied.
  return store.blobs.withoutRemovals(() => copyAll(store, dataDir, target));
}

async function copyAll(store: Store, dataDir: string, target: string): Promise<string[]> {
  const files = await store.backup(target);
  // After the database: a blob it names was stored before the message naming it, so it is copied.
  for (const entry of await readdir(dataDir, { withFileTypes: true })) {
    if (!isCopiedAsIs(entry.name)) continue;
    if (entry.isDirectory()) {
      await mkdir(path.join(target, entry.name), { mode: PRIVATE_DIR_MODE });
      await copyTree(path.join(dataDir, entry.name), path.join(target, entry.name), entry.name, files);
    } else if (entry.isFile()) {
      await copyDurably(path.join(dataDir, entry.name), path.join(target, entry.name));
      files.push(entry.name);
    }
  }
  const manifest: Manifest = { format: BACKUP_FORMAT, version: BACKUP_VERSION, created_at: new Date().toISOString(), files };
  await writeDurably(target, BACKUP_MANIFEST, Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`));
  await fsyncDir(target);
  return files;
}

async function readManifest(backup: string): Promise<Manifest> {
  let text: string;
  try {
    text = await readFile(path.join(backup, BACKUP_MANIFEST), 'utf8');
  } catch {
    throw new Error(`${backup} is not a finished backup: it has no ${BACKUP_MANIFEST}`);
  }
  const manifest = JSON.parse(text) as Partial<Manifest>;
  if (manifest.format !== BACKUP_FORMAT || !Array.isArray(manifest.files)) throw new Error(`${path.join(backup, BACKUP_MANIFEST)} is not a Remote Assistant backup manifest`);
  if (manifest.version !== BACKUP_VERSION) throw new Error(`the backup is of version ${String(manifest.version)}; this program reads version ${BACKUP_VERSION}`);
  for (const file of manifest.files) {
    if (typeof file !== 'string' || file.split('/').some((part) => part === '' || part === '.' || part === '..')) throw new Error(`the backup manifest names a bad file: ${JSON.stringify(file)}`);
  }
  return manifest as Manifest;
}

/**
 * Turns a backup back into a data directory. Refused while a service runs on `dataDir` (its lock is
 * taken for the time of the copy, so none can start meanwhile) and when `dataDir` already holds a
 * database or anything else: nothing there is overwritten.
 */
export async function restoreDataDir(backup: string, dataDir: string, logger: Logger = nullLogger): Promise<{ files: string[]; createdAt: string }> {
  const manifest = await readManifest(backup);
  await mkdir(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const lock = await acquireLock(dataDir, logger, dataDir);
  try {
    const present = (await readdir(dataDir)).filter((name) => name !== LOCK_FILE_NAME);
    if (present.length > 0)
      throw new Error(`the data directory ${dataDir} is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ', ...' : ''}): restore into a new or empty directory`);
    const written: string[] = [];
    try {
      for (const file of manifest.files) {
        const to = path.join(dataDir, ...file.split('/'));
        await mkdir(path.dirname(to), { recursive: true, mode: PRIVATE_DIR_MODE });
        await copyDurably(path.join(backup, ...file.split('/')), to);
        written.push(file);
      }
    } catch (error) {
      // Half a data directory would start as an incomplete one: take back what was copied.
      for (const entry of await readdir(dataDir)) if (entry !== LOCK_FILE_NAME) await rm(path.join(dataDir, entry), { recursive: true, force: true });
      throw error;
    }
    for (const dir of new Set(manifest.files.map((f) => path.dirname(path.join(dataDir, ...f.split('/')))))) await fsyncDir(dir);
    if (!(await stat(path.join(dataDir, DATABASE_FILE_NAME)).catch(() => undefined))) logger.warn('store.restore_without_database', { backup });
    return { files: written, createdAt: manifest.created_at };
  } finally {
    await lock.release();
  }
}
