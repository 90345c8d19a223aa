import { createHash } from 'node:crypto';
import type { ChangedFile, ChangeHunk, ChangeStatus } from '../protocol/worktrees';

/**
 * Reads git's own unified diff (`git diff --no-color --no-ext-diff -M`) into files and hunks. Our own
 * reader rather than jsdiff's parsePatch: git's extended headers (new/deleted file, rename from/to,
 * `Binary files ... differ`, C-quoted names) are what tell a file's status and path, and jsdiff reads
 * none of them; the hunk lines themselves are simple, counted by the header so a removed line that reads
 * `--- x` is never taken for a header.
 */

/** What one answer shows at most: a file's hunks beyond its share (or everything past the total) are cut. */
export interface DiffLimits {
  /** Characters of hunk lines shown for one file. */
  fileChars: number;
  /** Characters of hunk lines shown for all files together. */
  totalChars: number;
  /** Bytes of git's diff read at most (default GIT_MAX_OUTPUT_BYTES); the files past them are listed from a summary, cut. */
  readBytes?: number;
}

export const DEFAULT_DIFF_LIMITS: DiffLimits = { fileChars: 256 * 1024, totalChars: 2 * 1024 * 1024 };

/** A hunk's id: stable while the file's path and the hunk's lines stay the same (its line numbers may move). */
export function hunkId(path: string, lines: readonly string[]): string {
  return createHash('sha256').update(path).update('\0').update(lines.join('\n')).digest('hex').slice(0, 16);
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

interface Building {
  gitLine: string;
  status: ChangeStatus;
  oldName: string | null;
  newName: string | null;
  renameFrom: string | null;
  renameTo: string | null;
  binary: boolean;
  /** The blob ids of `index <old>..<new>` (with --full-index): what each side holds. */
  oldBlob: string | null;
  newBlob: string | null;
  additions: number;
  deletions: number;
  hunks: Omit<ChangeHunk, 'id'>[];
}

/** The files of a diff, and the blob id of each file's new side (null when the diff named none: a mode-only change). */
export interface ParsedDiff {
  files: ChangedFile[];
  newBlobs: Map<string, string | null>;
}

export function parseGitDiff(text: string, limits: DiffLimits = DEFAULT_DIFF_LIMITS): ParsedDiff {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const building: Building[] = [];
  let current: Building | undefined;
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.startsWith('diff --git ')) {
      current = {
        gitLine: line.slice('diff --git '.length),
        status: 'modified',
        oldName: null,
        newName: null,
        renameFrom: null,
        renameTo: null,
        binary: false,
        oldBlob: null,
        newBlob: null,
        additions: 0,
        deletions: 0,
        hunks: [],
      };
      building.push(current);
      i++;
      continue;
    }
    if (!current) {
      i++;
      continue;
    }
    const header = HUNK_HEADER.exec(line);
    if (header) {
      const [oldStart, oldLines, newStart, newLines] = [Number(header[1]), header[2] === undefined ? 1 : Number(header[2]), Number(header[3]), header[4] === undefined ? 1 : Number(header[4])];
      const hunkLines: string[] = [];
      let oldLeft = oldLines;
      let newLeft = newLines;
      i++;
      while (i < lines.length && (oldLeft > 0 || newLeft > 0 || lines[i].startsWith('\\'))) {
        const body = lines[i];
        const mark = body[0];
        if (mark === '+') {
          newLeft--;
          current.additions++;
        } else if (mark === '-') {
          oldLeft--;
          current.deletions++;
        } else if (mark === ' ' || body === '') {
          oldLeft--;
          newLeft--;
        } else if (mark !== '\\') break;
        hunkLines.push(body === '' ? ' ' : body);
        i++;
      }
      current.hunks.push({ header: line, old_start: oldStart, old_lines: oldLines, new_start: newStart, new_lines: newLines, lines: hunkLines });
      continue;
    }
    if (line.startsWith('new file mode')) current.status = 'added';
    else if (line.startsWith('deleted file mode')) current.status = 'deleted';
    else if (line.startsWith('rename from ')) current.renameFrom = unquote(line.slice('rename from '.length));
    else if (line.startsWith('rename to ')) {
      current.renameTo = unquote(line.slice('rename to '.length));
      current.status = 'renamed';
    } else if (line.startsWith('--- ')) current.oldName = sideName(line.slice(4), 'a/');
    else if (line.startsWith('+++ ')) current.newName = sideName(line.slice(4), 'b/');
    else if (line.startsWith('Binary files ') || line === 'GIT binary patch') current.binary = true;
    else if (line.startsWith('index ')) {
      const blobs = /^index ([0-9a-f]+)\.\.([0-9a-f]+)/.exec(line);
      if (blobs) [current.oldBlob, current.newBlob] = [blobs[1], blobs[2]];
    }
    i++;
  }
  let totalChars = 0;
  const newBlobs = new Map<string, string | null>();
  const files = building.map((file): ChangedFile => {
    const path = file.renameTo ?? file.newName ?? file.oldName ?? pathOfGitLine(file.gitLine);
    const hunks: ChangeHunk[] = [];
    let fileChars = 0;
    let cut = false;
    for (const hunk of file.hunks) {
      const chars = hunk.lines.reduce((sum, l) => sum + l.length + 1, 0);
      if (fileChars + chars > limits.fileChars || totalChars + chars > limits.totalChars) {
        cut = true;
        break;
      }
      fileChars += chars;
      totalChars += chars;
      hunks.push({ id: hunkId(path, hunk.lines), ...hunk });
    }
    newBlobs.set(path, file.newBlob);
    return { path, old_path: file.status === 'renamed' ? file.renameFrom : null, status: file.status, additions: file.additions, deletions: file.deletions, binary: file.binary, hunks, cut };
  });
  return { files, newBlobs };
}

/** `a/x`, `"b/x y"` (a name with spaces ends in a tab), or `/dev/null` (null). */
function sideName(raw: string, prefix: string): string | null {
  const name = unquote(raw.endsWith('\t') ? raw.slice(0, -1) : raw);
  if (name === '/dev/null') return null;
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

/** The path of a `diff --git a/x b/x` line where no other header names it (a binary or mode-only change: both sides are the same path). */
function pathOfGitLine(rest: string): string {
  if (rest.startsWith('"')) {
    const end = closingQuote(rest);
    return unquote(rest.slice(0, end + 1)).slice(2);
  }
  return rest.slice(2, 2 + (rest.length - 5) / 2);
}

function closingQuote(text: string): number {
  for (let i = 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i;
  }
  return text.length - 1;
}

const ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, '\\': 92 };

/** git's C-style quoting of a name (`"a/\303\251 x"`) back to the name; an unquoted name as is. */
export function unquote(raw: string): string {
  if (!raw.startsWith('"') || !raw.endsWith('"') || raw.length < 2) return raw;
  const bytes: number[] = [];
  const body = raw.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (ch !== '\\') {
      bytes.push(...Buffer.from(ch, 'utf8'));
      continue;
    }
    const next = body[++i];
    if (/[0-7]/.test(next)) {
      bytes.push(parseInt(body.slice(i, i + 3), 8));
      i += 2;
    } else bytes.push(ESCAPES[next] ?? next.charCodeAt(0));
  }
  return Buffer.from(bytes).toString('utf8');
}

/** A name as `git apply` reads it in a patch's headers: always quoted, so any name is one. */
export function quote(name: string): string {
  const bytes = Buffer.from(name, 'utf8');
  let out = '"';
  for (const byte of bytes) {
    if (byte === 34 || byte === 92) out += `\\${String.fromCharCode(byte)}`;
    else if (byte < 32 || byte >= 127) out += `\\${byte.toString(8).padStart(3, '0')}`;
    else out += String.fromCharCode(byte);
  }
  return `${out}"`;
}
