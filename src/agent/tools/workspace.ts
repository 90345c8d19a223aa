import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { isWellFormed } from '../../protocol/code-points';
import { privateFolders } from './private-folders';
import { ToolError } from './types';

/** The workspace folders in force (they change when the user opens another folder or edits service.json). */
export type WorkspaceRoots = () => string[];

export interface WorkspacePath {
  /** The absolute path with every symbolic link of its existing part resolved: the one to open. */
  path: string;
  /** The real path of the workspace root holding it. */
  root: string;
  /** `path` relative to `root`, with `/` separators (`.` for the root itself): the one to show. */
  relative: string;
}

function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

function toSlashes(p: string): string {
  return path.sep === '\\' ? p.replace(/\\/g, '/') : p;
}

function relativeTo(root: string, p: string): string {
  return toSlashes(path.relative(root, p)) || '.';
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

async function realRoots(roots: string[]): Promise<{ given: string; real: string }[]> {
  if (roots.length === 0) throw new ToolError('no workspace folder is open, so there are no files to work on');
  const found: { given: string; real: string }[] = [];
  for (const root of roots) {
    try {
      found.push({ given: path.resolve(root), real: await realpath(root) });
    } catch {
      // A root that does not exist (deleted, not mounted yet) holds nothing; the others still count.
    }
  }
  if (found.length === 0) throw new ToolError(`the workspace folder ${roots[0]} does not exist`);
  return found;
}

/**
 * Where `input` lands, refused unless it stays inside a workspace root: relative paths resolve against
 * the first root; `..`, absolute paths elsewhere and symbolic links (of the file or of any parent) that
 * lead out are refused. A path that does not exist yet (a file about to be written) is judged by its
 * nearest existing ancestor, whose real path must be inside. A path with a NUL or a lone surrogate is refused.
 */
export async function resolveWorkspacePath(roots: string[], input: string): Promise<WorkspacePath> {
  if (input.length === 0) throw new ToolError('path is empty');
  if (input.includes('\0')) throw new ToolError('path contains a NUL character');
  // No file name holds one as the same text (Node writes U+FFFD's bytes), nor does the store (UTF-8): a
  // write's undo record would name neither the path asked for nor the file written.
  if (!isWellFormed(input)) throw new ToolError('path contains a lone UTF-16 surrogate (half of a character), which no file name can hold');
  const known = await realRoots(roots);
  const candidate = path.resolve(known[0].real, input);
  // Judged on the text first: the message is clearer, and nothing outside is even looked at.
  if (!known.some((r) => isInside(r.real, candidate) || isInside(r.given, candidate))) {
    throw new ToolError(`path ${input} is outside the workspace`);
  }

  let existing = candidate;
  const missing: string[] = [];
  for (;;) {
    try {
      await lstat(existing);
      break;
    } catch (error) {
      const code = errorCode(error);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
      const parent = path.dirname(existing);
      if (parent === existing) throw error;
      missing.unshift(path.basename(existing));
      existing = parent;
    }
  }
  let real: string;
  try {
    real = await realpath(existing);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT' || code === 'ELOOP') throw new ToolError(`path ${input} goes through a broken symbolic link`);
    throw error;
  }
  const full = missing.length > 0 ? path.join(real, ...missing) : real;
  const root = known.find((r) => isInside(r.real, full));
  if (!root) throw new ToolError(`path ${input} is outside the workspace (a symbolic link leads out of it)`);
  refusePrivate(full, input);
  return { path: full, root: root.real, relative: relativeTo(root.real, full) };
}

/** Whether the real path `full` lies in (or is) a folder file tools keep out of (see private-folders). */
export function inPrivateFolder(full: string): boolean {
  for (const folder of privateFolders()) if (isInside(folder, full)) return true;
  return false;
}

/** Throws when the real path `full` lies in a folder file tools keep out of (see private-folders). */
function refusePrivate(full: string, shown: string): void {
  if (inPrivateFolder(full)) {
    throw new ToolError(`path ${shown} is in the service's data directory (its secrets and conversations); file tools do not open it`);
  }
}

/**
 * `resolveWorkspacePath` for a file tool's write, refused inside git's own data: a `.git` folder (the
 * repository's hooks and config: a hook written there runs with the next commit the person makes) or a
 * worktree's `.git` file (it names the repository git works on). Any letter case: a case-insensitive
 * file system reads `.GIT` as `.git`. run_command is not confined by this (docs/protocol.md, "Worktrees").
 */
export async function resolveWritablePath(roots: string[], input: string): Promise<WorkspacePath> {
  const target = await resolveWorkspacePath(roots, input);
  if (target.relative.split('/').some((part) => part.toLowerCase() === '.git')) {
    throw new ToolError(`path ${input} is inside git's own data (.git): file tools do not write there`);
  }
  return target;
}

/** `resolveWorkspacePath`, the path alone. */
export async function resolveInWorkspace(roots: string[], input: string): Promise<string> {
  return (await resolveWorkspacePath(roots, input)).path;
}

/**
 * The path that permission rules match and prompts show, worked out from the text alone (it must be
 * synchronous): relative to the root it falls in, with `/` separators; absolute when outside every root.
 * `./a/../b.txt` and `/ws/b.txt` both read `b.txt`, so a rule cannot be dodged by spelling a path
 * differently. Symbolic links are not followed here; the tool itself refuses those that lead out.
 */
export function workspaceSubject(roots: string[], input: string | undefined): string {
  const p = input === undefined || input === '' ? '.' : input;
  if (roots.length === 0) return toSlashes(p);
  const place = placeInRoots(roots, p);
  return place ? place.relative : toSlashes(path.resolve(path.resolve(roots[0]), p));
}

/**
 * The root `input` falls in (resolved against the first, by its text alone, no link followed) and the
 * path relative to it with `/` separators; undefined when it is outside every root.
 */
export function placeInRoots(roots: string[], input: string): { root: string; relative: string } | undefined {
  if (roots.length === 0) return undefined;
  const resolvedRoots = roots.map((r) => path.resolve(r));
  const candidate = path.resolve(resolvedRoots[0], input);
  const root = resolvedRoots.find((r) => isInside(r, candidate));
  return root ? { root, relative: relativeTo(root, candidate) } : undefined;
}
