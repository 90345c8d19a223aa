import { randomBytes } from 'node:crypto';
import { constants, existsSync } from 'node:fs';
import { lstat, mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from './types';
import type { WorkspacePath } from './workspace';

/**
 * File access that cannot be steered out of the workspace by swapping a folder for a symbolic link
 * between the check (resolveWorkspacePath) and the open or write.
 *
 * Node has no openat(), so on Linux each folder is held open and what lies under it is reached through
 * `/proc/self/fd/<fd>/<name>`: the kernel resolves that from the open folder itself, never by its name
 * again. The folders are opened one by one from the workspace root with O_NOFOLLOW, so a component
 * that is (or has become) a symbolic link stops the walk; the file is opened or created with O_NOFOLLOW
 * too, and a write goes to a temp file created with O_EXCL, renamed within the same open folder.
 *
 * Elsewhere (macOS, Windows: no /proc) the same steps go by path: symbolic links present at each step
 * are still refused, but a swap between two steps is not excluded. docs/protocol.md says so.
 */
const PROC_FD = process.platform === 'linux' && existsSync('/proc/self/fd');
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_DIRECTORY = constants.O_DIRECTORY ?? 0;
/**
 * For opening what is only read: a named pipe then opens at once (the caller's fstat refuses it)
 * instead of blocking a thread of libuv's pool until a writer comes; regular files are not affected.
 */
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** A workspace folder held open; `at(name)` names an entry of it. */
export class AnchoredDir {
  private constructor(
    private readonly handle: FileHandle,
    private readonly realPath: string,
  ) {}

  /** The path that reaches `name` inside this very folder (on Linux, whatever its name is now). */
  at(name: string): string {
    return PROC_FD ? `/proc/self/fd/${this.handle.fd}/${name}` : path.join(this.realPath, name);
  }

  close(): Promise<void> {
    return this.handle.close();
  }

  /**
   * The folder holding `target` (its parent), walked to from the workspace root one folder at a time,
   * none of them followed if it is a symbolic link. `create`: missing folders are made on the way.
   */
  static async parentOf(target: WorkspacePath, shown: string, create: boolean): Promise<AnchoredDir> {
    if (target.relative === '.') throw new ToolError(`${shown} is the workspace folder itself, not a file`);
    const components = target.relative.split('/').slice(0, -1);
    let dir = new AnchoredDir(await open(target.root, constants.O_RDONLY | O_DIRECTORY), target.root);
    try {
      for (const name of components) {
        const next = await AnchoredDir.child(dir, name, shown, create);
        await dir.close();
        dir = next;
      }
      return dir;
    } catch (error) {
      await dir.close();
      throw error;
    }
  }

  private static async child(parent: AnchoredDir, name: string, shown: string, create: boolean): Promise<AnchoredDir> {
    const where = parent.at(name);
    for (let attempt = 0; ; attempt++) {
      try {
        const handle = await open(where, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        return new AnchoredDir(handle, path.join(parent.realPath, name));
      } catch (error) {
        const code = errorCode(error);
        if (code === 'ENOENT' && create && attempt === 0) {
          await mkdir(where).catch((e: unknown) => {
            if (errorCode(e) !== 'EEXIST') throw e;
          });
          continue;
        }
        if (code === 'ENOENT') throw new ToolError(`${shown} does not exist`);
        if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'EMLINK') {
          // Linux answers ENOTDIR for a symbolic link opened with O_DIRECTORY | O_NOFOLLOW: tell them apart.
          const link = await lstat(where).then(
            (info) => info.isSymbolicLink(),
            () => false,
          );
          if (link) throw new ToolError(`${shown}: the folder ${name} became a symbolic link after the path was checked; nothing was done`);
          throw new ToolError(`cannot reach ${shown}: one of its parent folders is a file`);
        }
        throw error;
      }
    }
  }
}

/**
 * Opens the file at `target` for reading, refusing a symbolic link in its place. Folders open too (the
 * caller's fstat tells them apart). The caller closes the handle.
 */
export async function openForReading(target: WorkspacePath, shown: string): Promise<FileHandle> {
  if (target.relative === '.') return open(target.root, constants.O_RDONLY | O_DIRECTORY);
  const dir = await AnchoredDir.parentOf(target, shown, false);
  try {
    return await open(dir.at(path.basename(target.path)), constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new ToolError(`${shown} does not exist`);
    if (code === 'EACCES' || code === 'EPERM') throw new ToolError(`${shown}: permission denied`);
    if (code === 'ELOOP' || code === 'EMLINK') throw new ToolError(`${shown} became a symbolic link after the path was checked; try again`);
    throw error;
  } finally {
    await dir.close();
  }
}

/** A path that reaches the folder or file open as `handle` itself (on Linux; elsewhere `fallback`, its path). */
export function pathOfOpen(handle: FileHandle, fallback: string): string {
  return PROC_FD ? `/proc/self/fd/${handle.fd}` : fallback;
}

/**
 * Replaces (or creates) the file at `target` (`content`: text, written as UTF-8, or bytes) so that a reader, or a crash, sees the old content or the
 * new, never half: a temp file beside it (O_EXCL, O_NOFOLLOW), fsync, rename over, all inside the
 * folder held open. An existing file keeps its permission bits (not set-user-ID or set-group-ID). `createParents`: missing folders are made.
 * Answers whether a file was there before.
 */
export async function writeFileInWorkspace(target: WorkspacePath, shown: string, content: string | Uint8Array, createParents: boolean): Promise<{ existed: boolean }> {
  const dir = await AnchoredDir.parentOf(target, shown, createParents);
  try {
    const name = path.basename(target.path);
    let mode: number | undefined;
    try {
      const info = await lstat(dir.at(name));
      if (info.isDirectory()) throw new ToolError(`${shown} is a directory; give the path of a file`);
      // A symbolic link here is replaced by the file, not written through. The permission bits carry
      // over, never set-user-ID, set-group-ID or sticky: a service running as root would otherwise turn
      // a set-user-ID program into a root one holding the model's text.
      if (info.isFile()) mode = info.mode & 0o777;
    } catch (error) {
      if (error instanceof ToolError || errorCode(error) !== 'ENOENT') throw error;
    }
    const temp = dir.at(`.${name}.${randomBytes(6).toString('hex')}.tmp`);
    const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, mode ?? 0o666);
    try {
      try {
        await handle.writeFile(content);
        if (mode !== undefined && process.platform !== 'win32') await handle.chmod(mode);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, dir.at(name));
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw error;
    }
    return { existed: mode !== undefined };
  } finally {
    await dir.close();
  }
}

/**
 * Removes the file at `target` (undo of a file the agent created), inside the folder held open like a
 * write; a symbolic link in its place is removed, never followed. Answers whether there was one.
 */
export async function removeFileInWorkspace(target: WorkspacePath, shown: string): Promise<boolean> {
  const dir = await AnchoredDir.parentOf(target, shown, false);
  try {
    await unlink(dir.at(path.basename(target.path)));
    return true;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    throw error;
  } finally {
    await dir.close();
  }
}
