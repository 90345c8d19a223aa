import { constants } from 'node:fs';
import { lstat, open, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';
import { quote } from './diff-parse';

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
export async function untrackedDiff(root: string, files: readonly string[]): Promise<string> {
  const realRoot = await realpath(root);
  // Each folder's real path once per answer (a hundred new files in one folder: one realpath, not a hundred).
  const folders = new Map<string, Promise<boolean>>();
  const inside = (folder: string): Promise<boolean> => {
    let answer = folders.get(folder);
    if (!answer) {
      answer = realpath(path.join(root, folder)).then(
        (real) => real === (folder === '.' ? realRoot : path.join(realRoot, folder)),
        () => false,
      );
      folders.set(folder, answer);
    }
    return answer;
  };
  const parts: string[] = new Array(files.length).fill('');
  let next = 0;
  const reader = async () => {
    while (next < files.length) {
      const index = next++;
      parts[index] = await fileDiff(root, inside, files[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(READERS, files.length) }, reader));
  return parts.join('');
}

async function fileDiff(root: string, inside: (folder: string) => Promise<boolean>, name: string): Promise<string> {
  const full = path.join(root, name);
  if (!(await inside(path.dirname(name)))) return '';
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

function header(name: string, mode: string, binary: boolean): string {
  const lines = `diff --git ${quote(`a/${name}`)} ${quote(`b/${name}`)}\nnew file mode ${mode}\n`;
  return binary ? `${lines}Binary files /dev/null and ${quote(`b/${name}`)} differ\n` : lines;
}
