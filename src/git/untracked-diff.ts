import { constants } from 'node:fs';
import { lstat, open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { ChangedFile } from '../protocol/worktrees';
import { quote } from './diff-parse';
import { GIT_MAX_OUTPUT_BYTES } from './git-in';

/** An untracked file bigger than this is listed as binary (no hunks): its text would not be shown anyway. */
export const MAX_UNTRACKED_BYTES = 16 * 1024 * 1024;
/** git's own test for binary content: a NUL byte in the first 8000 bytes. */
const BINARY_PROBE_BYTES = 8000;
const READERS = 16;

/**
 * The diff text git would write for files it does not track yet (each one added whole), made here from
 * the files themselves: one `git add -N` into a copy of the index cost more than the whole `git diff`
 * on a 10,000-file repository (bench/changes.ts). Nothing outside the worktree is read: a file is
 * opened without following a symlink (a symlink is shown as its target's name, as git does), and only
 * when its folder really is inside the worktree (not a symlink swapped in after git listed it).
 * .gitattributes is not consulted (a text file marked `binary` shows its lines).
 */
export async function untrackedDiff(root: string, files: readonly string[], budgetBytes = GIT_MAX_OUTPUT_BYTES): Promise<UntrackedDiff> {
  const realRoot = await realpath(root);
  const parts: (string | ChangedFile)[] = new Array(files.length).fill('');
  let left = budgetBytes;
  const claim = (bytes: number): boolean => {
    if (bytes > left) return false;
    left -= bytes;
    return true;
  };
  let next = 0;
  const reader = async () => {
    while (next < files.length) {
      const index = next++;
      parts[index] = await fileDiff(root, realRoot, files[index], claim);
    }
  };
  await Promise.all(Array.from({ length: Math.min(READERS, files.length) }, reader));
  return { text: parts.filter((part) => typeof part === 'string').join(''), counted: parts.filter((part) => typeof part !== 'string') };
}

/**
 * The new files' diff text, and the files past the budget: read only to count their lines (many big new
 * files would otherwise be held whole in memory at once, hundreds of MB), listed `cut` without hunks.
 */
export interface UntrackedDiff {
  text: string;
  counted: ChangedFile[];
}

async function fileDiff(root: string, realRoot: string, name: string, claim: (bytes: number) => boolean): Promise<string | ChangedFile> {
  const full = path.join(root, name);
  const folder = path.dirname(name);
  const realFolder = await realpath(path.join(root, folder)).catch(() => undefined);
  if (realFolder !== (folder === '.' ? realRoot : path.join(realRoot, folder))) return '';
  const info = await lstat(full).catch(() => undefined);
  if (!info) return '';
  let content: Buffer;
  let mode: string;
  if (info.isSymbolicLink()) {
    content = Buffer.from(await readlink(full));
    mode = '120000';
  } else if (info.isFile()) {
    mode = info.mode & 0o100 ? '100755' : '100644';
    if (info.size > MAX_UNTRACKED_BYTES) return header(name, mode, true);
    const handle = await open(full, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
    if (!handle) return '';
    if (!claim(info.size)) {
      try {
        return await countedFile(name, handle);
      } finally {
        await handle.close();
      }
    }
    try {
      content = await handle.readFile();
    } finally {
      await handle.close();
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

/** A new file's `+` count (its lines, as git counts them), read in chunks and not kept; binary as git tells it. */
async function countedFile(name: string, handle: FileHandle): Promise<ChangedFile> {
  const chunk = Buffer.alloc(64 * 1024);
  let lines = 0;
  let size = 0;
  let last = 0x0a;
  let binary = false;
  for (;;) {
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
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
