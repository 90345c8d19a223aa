import { closeSync, constants, lstatSync, openSync, readlinkSync, readSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { quote } from './diff-parse';

/** An untracked file bigger than this is listed as binary (no hunks): its text would not be shown anyway. */
export const MAX_UNTRACKED_BYTES = 16 * 1024 * 1024;
/** git's own test for binary content: a NUL byte in the first 8000 bytes. */
const BINARY_PROBE_BYTES = 8000;
/** Characters made in one turn of the event loop before the others get theirs. */
const BATCH_BYTES = 1024 * 1024;

/**
 * The diff text git would write for files it does not track yet (each one added whole), made here from
 * the files themselves: one `git add -N` into a copy of the index cost more than the whole `git diff`
 * on a 10,000-file repository (bench/changes.ts). Nothing outside the worktree is read: a file is
 * opened without following a symlink (a symlink is shown as its target's name, as git does), and only
 * when its folder really is inside the worktree (not a symlink swapped in after git listed it).
 * .gitattributes is not consulted (a text file marked `binary` shows its lines).
 *
 * Read with the synchronous calls, about 1 MiB a turn of the event loop: the promise calls cost ten
 * times the CPU (a hundred small files: 20-30 ms against 2 ms, measured), which on a loaded machine is
 * most of what get_changes adds to git's own diff; a turn stays short (one file at most 16 MiB).
 */
export async function untrackedDiff(root: string, files: readonly string[]): Promise<string> {
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
  const parts: string[] = [];
  let read = 0;
  for (const name of files) {
    if (read >= BATCH_BYTES) {
      await nextTurn();
      read = 0;
    }
    const part = fileDiff(root, inside, name);
    // A file's calls weigh as 1 KiB, so thousands of empty or binary files take turns too.
    read += part.length + 1024;
    parts.push(part);
  }
  return parts.join('');
}

function realOf(folder: string): string | undefined {
  try {
    return realpathSync.native(folder);
  } catch {
    return undefined;
  }
}

function fileDiff(root: string, inside: (folder: string) => boolean, name: string): string {
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
    const read = info.size === 0 ? Buffer.alloc(0) : readUpTo(full, info.size);
    if (!read) return '';
    content = read;
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
 * The file's first `size` bytes (its size when listed): one read, not a size check and a read to the
 * end (a file grown since shows what it held then). Opened without following a symlink: undefined when
 * it cannot be (swapped for one since it was listed) or is gone.
 */
function readUpTo(full: string, size: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(full, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    const buffer = Buffer.allocUnsafe(size);
    return buffer.subarray(0, readSync(fd, buffer, 0, size, 0));
  } finally {
    closeSync(fd);
  }
}

function header(name: string, mode: string, binary: boolean): string {
  const lines = `diff --git ${quote(`a/${name}`)} ${quote(`b/${name}`)}\nnew file mode ${mode}\n`;
  return binary ? `${lines}Binary files /dev/null and ${quote(`b/${name}`)} differ\n` : lines;
}
