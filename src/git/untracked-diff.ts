import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, readSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { ChangedFile } from '../protocol/worktrees';
import { quote } from './diff-parse';
import { GIT_MAX_OUTPUT_BYTES } from './git-in';

/** An untracked file bigger than this is listed as binary (no hunks): its text would not be shown anyway. */
export const MAX_UNTRACKED_BYTES = 16 * 1024 * 1024;
/** git's own test for binary content: a NUL byte in the first 8000 bytes. */
const BINARY_PROBE_BYTES = 8000;
/** Bytes read (or characters made) in one turn of the event loop before the others get theirs. */
const BATCH_BYTES = 1024 * 1024;
/** What one file's calls weigh in a turn besides its bytes, so thousands of empty or binary files take turns too. */
const FILE_WEIGHT = 1024;

/**
 * The diff text git would write for files it does not track yet (each one added whole), made here from
 * the files themselves: one `git add -N` into a copy of the index cost more than the whole `git diff`
 * on a 10,000-file repository (bench/changes.ts). Nothing outside the worktree is read: a file is
 * opened without following a symlink (a symlink is shown as its target's name, as git does), and only
 * when its folder really is inside the worktree (not a symlink swapped in after git listed it).
 * .gitattributes is not consulted (a text file marked `binary` shows its lines).
 *
 * Read with the synchronous calls, about 1 MiB a turn of the event loop: the promise calls cost ten
 * times the CPU (a hundred small files: 20-30 ms against 2 ms, measured), which on a loaded machine was
 * most of what get_changes added to git's own diff; a turn stays short (one file is at most 16 MiB).
 */
export async function untrackedDiff(root: string, files: readonly string[], budgetBytes = GIT_MAX_OUTPUT_BYTES): Promise<UntrackedDiff> {
  const realRoot = realpathSync.native(root);
  // Each folder's real path once per answer (a hundred new files in one folder: one realpath, not a hundred).
  const folders = new Map<string, boolean>();
  const inside = (folder: string): boolean => {
    let answer = folders.get(folder);
    if (answer === undefined) {
      answer = realOf(path.join(root, folder)) === (folder === '.' ? realRoot : path.join(realRoot, folder));
      folders.set(folder, answer);
    }
    return answer;
  };
  let left = budgetBytes;
  const claim = (bytes: number): boolean => {
    if (bytes > left) return false;
    left -= bytes;
    return true;
  };
  const text: string[] = [];
  const counted: ChangedFile[] = [];
  let turn = 0;
  for (const name of files) {
    if (turn >= BATCH_BYTES) {
      await nextTurn();
      turn = 0;
    }
    const part = fileDiff(root, inside, name, claim);
    if (typeof part === 'string') {
      text.push(part);
      turn += part.length + FILE_WEIGHT;
    } else {
      counted.push(part.file);
      turn += part.bytes + FILE_WEIGHT;
    }
  }
  return { text: text.join(''), counted };
}

/**
 * The new files' diff text, and the files past the budget: read only to count their lines (many big new
 * files would otherwise be held whole in memory at once, hundreds of MB), listed `cut` without hunks.
 */
export interface UntrackedDiff {
  text: string;
  counted: ChangedFile[];
}

function realOf(folder: string): string | undefined {
  try {
    return realpathSync.native(folder);
  } catch {
    return undefined;
  }
}

function fileDiff(root: string, inside: (folder: string) => boolean, name: string, claim: (bytes: number) => boolean): string | { file: ChangedFile; bytes: number } {
  const full = path.join(root, name);
  if (!inside(path.dirname(name))) return '';
  const info = lstatSync(full, { throwIfNoEntry: false });
  if (!info) return '';
  let content: Buffer;
  let mode: string;
  if (info.isSymbolicLink()) {
    content = Buffer.from(readlinkSync(full));
    mode = '120000';
  } else if (info.isFile()) {
    mode = info.mode & 0o100 ? '100755' : '100644';
    if (info.size > MAX_UNTRACKED_BYTES) return header(name, mode, true);
    const fd = openNoFollow(full);
    if (fd === undefined) return '';
    try {
      if (!claim(info.size)) return { file: countedFile(name, fd), bytes: info.size };
      // Its size when listed, in one read (a file grown since shows what it held then).
      const buffer = Buffer.allocUnsafe(info.size);
      content = buffer.subarray(0, info.size === 0 ? 0 : readSync(fd, buffer, 0, info.size, 0));
    } finally {
      closeSync(fd);
    }
  } else return '';
  if (content.subarray(0, BINARY_PROBE_BYTES).includes(0)) return header(name, mode, true);
  if (content.length === 0) return header(name, mode, false);
  const text = content.toString('utf8');
  const endsWithNewline = text.endsWith('\n');
  const lines = (endsWithNewline ? text.slice(0, -1) : text).split('\n');
  const body = lines.map((line) => `+${line}`);
  if (!endsWithNewline) body.push('\\ No newline at end of file');
  return `${header(name, mode, false)}--- /dev/null\n+++ ${quote(`b/${name}`)}\n@@ -0,0 +1${lines.length === 1 ? '' : `,${lines.length}`} @@\n${body.join('\n')}\n`;
}

/**
 * Opened without following a symlink, and only if it is still a regular file: undefined when it cannot be
 * (swapped since it was listed for a symlink, or for a FIFO whose blocking open would hold the loop, or gone).
 */
function openNoFollow(full: string): number | undefined {
  let fd: number;
  try {
    fd = openSync(full, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  if (fstatSync(fd).isFile()) return fd;
  closeSync(fd);
  return undefined;
}

/** A new file's `+` count (its lines, as git counts them), read in chunks and not kept; binary as git tells it. */
function countedFile(name: string, fd: number): ChangedFile {
  const chunk = Buffer.alloc(64 * 1024);
  let lines = 0;
  let size = 0;
  let last = 0x0a;
  let binary = false;
  for (;;) {
    const bytesRead = readSync(fd, chunk, 0, chunk.length, null);
    if (bytesRead === 0) break;
    const bytes = chunk.subarray(0, bytesRead);
    if (size < BINARY_PROBE_BYTES && bytes.subarray(0, BINARY_PROBE_BYTES - size).includes(0)) binary = true;
    for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a, at + 1)) lines++;
    last = bytes[bytesRead - 1];
    size += bytesRead;
  }
  const additions = binary ? 0 : lines + (last === 0x0a ? 0 : 1);
  return { path: name, old_path: null, status: 'added', additions, deletions: 0, binary, hunks: [], cut: !binary && additions > 0 };
}

function header(name: string, mode: string, binary: boolean): string {
  const lines = `diff --git ${quote(`a/${name}`)} ${quote(`b/${name}`)}\nnew file mode ${mode}\n`;
  return binary ? `${lines}Binary files /dev/null and ${quote(`b/${name}`)} differ\n` : lines;
}
