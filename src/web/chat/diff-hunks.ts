/**
 * Reads the unified diff of a `permission.request` preview (docs/protocol.md, "Previews") into hunks
 * whose lines carry their old and new line numbers, for the prompt card's diff view. Pure (no DOM), so
 * it is unit-tested in Node. Tolerant: the service may cut a diff anywhere (`truncated`), so a hunk may
 * end early, and a line the format does not know is kept as a note rather than dropped.
 */

export type DiffLineKind = 'context' | 'add' | 'del' | 'note';

export interface DiffLine {
  kind: DiffLineKind;
  /** The line without its `+`/`-`/space prefix and without its line ending. */
  text: string;
  /** Line number in the file as it is now (context and removed lines). */
  oldLine?: number;
  /** Line number in the file as the tool leaves it (context and added lines). */
  newLine?: number;
  /** The line ends with `\r\n` (a CRLF file): shown, since a change of line ending alone is a change. */
  crlf?: boolean;
  /** `\ No newline at end of file` followed this line. */
  noNewline?: boolean;
}

export interface DiffHunk {
  /** The `@@ -a,b +c,d @@` line as given (with its section text, if any). */
  header: string;
  oldStart: number;
  newStart: number;
  lines: DiffLine[];
}

export interface ParsedDiff {
  /** `a/<path>` side; undefined for a new file (`--- /dev/null`). */
  oldPath?: string;
  newPath?: string;
  /** Text between the headers and the first hunk (e.g. "Binary file x is replaced by ..."). */
  notes: string[];
  hunks: DiffHunk[];
  added: number;
  removed: number;
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

function stripSide(path: string): string | undefined {
  if (path === '/dev/null') return undefined;
  return path.replace(/^[ab]\//, '');
}

export function parseUnifiedDiff(diff: string): ParsedDiff {
  const parsed: ParsedDiff = { notes: [], hunks: [], added: 0, removed: 0 };
  // The diff's own lines end with `\n`; a file line's `\r` stays on it (split on `\n` only).
  const rows = diff.split('\n');
  if (rows.at(-1) === '') rows.pop();
  let hunk: DiffHunk | undefined;
  let oldLine = 0;
  let newLine = 0;
  for (const row of rows) {
    const header = HUNK_HEADER.exec(row);
    if (header) {
      oldLine = Number(header[1]);
      newLine = Number(header[3]);
      // A zero count's start is the line before the (empty) range: the first line shown is the next.
      if (header[2] === '0') oldLine += 1;
      if (header[4] === '0') newLine += 1;
      hunk = { header: row, oldStart: oldLine, newStart: newLine, lines: [] };
      parsed.hunks.push(hunk);
      continue;
    }
    if (!hunk) {
      if (row.startsWith('--- ')) parsed.oldPath = stripSide(row.slice(4));
      else if (row.startsWith('+++ ')) parsed.newPath = stripSide(row.slice(4));
      else parsed.notes.push(row);
      continue;
    }
    const mark = row[0];
    if (mark === '\\') {
      const last = hunk.lines.at(-1);
      if (last) last.noNewline = true;
      continue;
    }
    const line = lineOf(row.slice(1));
    if (mark === ' ') hunk.lines.push({ kind: 'context', ...line, oldLine: oldLine++, newLine: newLine++ });
    else if (mark === '-') {
      hunk.lines.push({ kind: 'del', ...line, oldLine: oldLine++ });
      parsed.removed++;
    } else if (mark === '+') {
      hunk.lines.push({ kind: 'add', ...line, newLine: newLine++ });
      parsed.added++;
    } else hunk.lines.push({ kind: 'note', text: row });
  }
  return parsed;
}

function lineOf(text: string): { text: string; crlf?: boolean } {
  return text.endsWith('\r') ? { text: text.slice(0, -1), crlf: true } : { text };
}

/** Every line of every hunk, in order: what a view cuts after so many lines. */
export function countLines(diff: ParsedDiff): number {
  return diff.hunks.reduce((sum, hunk) => sum + hunk.lines.length, 0);
}
