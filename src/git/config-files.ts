import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

/**
 * What a reading of a folder's git config depended on, so the reading can be kept until one of them
 * changes (run-git.ts reads the config's filter and merge drivers before each run that may filter: one
 * git process on the way of every get_changes, docs/design.md "Git's cost"). The files: the ones the
 * reading's entries came from (`--show-origin`), every file an include names (read or not: its condition
 * may hold later), the system, global and XDG files, the repository's config, the worktree's
 * config.worktree and HEAD (an `includeIf "onbranch:"`), and the folder's `.git` and its git directory's
 * `commondir` (which repository it is). A file's state is its inode, size and change time: a write
 * always moves the change time, which (unlike the modification time) no one but root can set back.
 */
export interface ConfigFiles {
  /** The environment the places were found with (HOME, XDG_CONFIG_HOME). */
  env: string;
  /** Each file and its state when read ('' when absent). */
  states: Map<string, string>;
}

/** The git directory and common directory of `cwd` when it is a working tree's top level (its own `.git`), else undefined: such a reading is not kept. */
export function gitDirsOf(cwd: string): { dotGit: string; gitDir: string; commonDir: string } | undefined {
  const dotGit = path.join(cwd, '.git');
  try {
    const info = statSync(dotGit);
    let gitDir = dotGit;
    if (info.isFile()) {
      const pointer = /^gitdir: (.+)$/m.exec(readFileSync(dotGit, 'utf8'))?.[1]?.trim();
      if (!pointer) return undefined;
      gitDir = path.resolve(cwd, pointer);
    } else if (!info.isDirectory()) return undefined;
    let commonDir = gitDir;
    try {
      commonDir = path.resolve(gitDir, readFileSync(path.join(gitDir, 'commondir'), 'utf8').trim());
    } catch {
      // No commondir file: the git directory is the common one (not a linked worktree).
    }
    return { dotGit, gitDir, commonDir };
  } catch {
    return undefined;
  }
}

/**
 * The files a reading depended on: `origins` (the files its entries came from) and `includes` (each
 * include's path as written, with the file that named it) besides the fixed places.
 */
export function configFilesOf(cwd: string, origins: readonly string[], includes: readonly { path: string; from: string }[]): ConfigFiles | undefined {
  const dirs = gitDirsOf(cwd);
  if (!dirs) return undefined;
  const home = process.env.HOME ?? homedir();
  const xdg = process.env.XDG_CONFIG_HOME || path.join(home, '.config');
  const files = new Set<string>([
    dirs.dotGit,
    // Which common directory (and so which config) the git directory uses: written, it names another.
    path.join(dirs.gitDir, 'commondir'),
    path.join(dirs.gitDir, 'HEAD'),
    path.join(dirs.gitDir, 'config.worktree'),
    path.join(dirs.commonDir, 'config'),
    path.join(home, '.gitconfig'),
    path.join(xdg, 'git', 'config'),
    '/etc/gitconfig',
    ...origins.map((file) => path.resolve(cwd, file)),
  ]);
  for (const include of includes) {
    const named = include.path.startsWith('~/') ? path.join(home, include.path.slice(2)) : include.path;
    files.add(path.resolve(path.dirname(path.resolve(cwd, include.from)), named));
  }
  return { env: envKey(), states: new Map([...files].map((file) => [file, stateOf(file)])) };
}

/** Whether every file is as it was when read (and the places are found the same way). */
export function unchanged(files: ConfigFiles): boolean {
  if (files.env !== envKey()) return false;
  for (const [file, state] of files.states) if (stateOf(file) !== state) return false;
  return true;
}

/**
 * Whether `files` may be kept as the state of a reading made from `started` (ms) on, given the look
 * `before` it: each file looked at before is as it was then, and each one found only by the reading
 * (an include) last changed well before it started (a change while git read it may be in `files`
 * while the reading holds the older content).
 */
export function settledSince(files: ConfigFiles, before: ConfigFiles, started: number): boolean {
  const margin = BigInt(started - SETTLE_MS) * 1_000_000n;
  for (const [file, state] of files.states) {
    const earlier = before.states.get(file);
    if (earlier !== undefined ? earlier !== state : (statSync(file, { bigint: true, throwIfNoEntry: false })?.ctimeNs ?? 0n) >= margin) return false;
  }
  return true;
}
/** How long before a reading an include must have last changed for the reading to be kept. */
const SETTLE_MS = 1_000;

function envKey(): string {
  return `${process.env.HOME ?? ''}\0${process.env.XDG_CONFIG_HOME ?? ''}`;
}

function stateOf(file: string): string {
  const info = statSync(file, { bigint: true, throwIfNoEntry: false });
  return info ? `${info.dev}:${info.ino}:${info.size}:${info.ctimeNs}:${info.mtimeNs}` : '';
}
