/**
 * Applies a unified diff (as agent/tools/unified-diff.ts writes it: `permission.request`'s diff
 * preview) to the text it was made from. The wire preview carries only the diff, so the editor's Show
 * Diff rebuilds the proposed text from the file on disk; every context and removed line is checked, so
 * a file changed since the prompt is refused rather than shown wrong. No `vscode` here: tested alone.
 */

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;
const NO_NEWLINE = '\\';

/** Lines with their `\n` kept (the diff maker's split), so a last line without one stays so. */
function splitKeepingNewlines(text: string): string[] {
  const lines = text.split('\n').map((line) => `${line}\n`);
  lines[lines.length - 1] = lines[lines.length - 1].slice(0, -1);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

interface Hunk {
  /** 0-based index of the first old line the hunk covers (or inserts before). */
  oldIndex: number;
  ops: { kind: ' ' | '-' | '+'; line: string }[];
}

function parseHunks(diff: string): Hunk[] {
  const rows = diff.split('\n');
  const hunks: Hunk[] = [];
  let i = 0;
  while (i < rows.length) {
    const header = HUNK.exec(rows[i]);
    i += 1;
    if (!header) continue;
    const oldCount = header[2] === undefined ? 1 : Number(header[2]);
    const newCount = header[4] === undefined ? 1 : Number(header[4]);
    const oldStart = Number(header[1]);
    const hunk: Hunk = { oldIndex: oldCount === 0 ? oldStart : oldStart - 1, ops: [] };
    let olds = 0;
    let news = 0;
    while ((olds < oldCount || news < newCount) && i < rows.length) {
      const row = rows[i];
      i += 1;
      const kind = row[0];
      if (kind !== ' ' && kind !== '-' && kind !== '+') throw new Error(`not a unified diff line: ${JSON.stringify(row.slice(0, 80))}`);
      // The maker marks a last line without `\n` with the next row; every other line had one.
      const endsFile = rows[i]?.startsWith(NO_NEWLINE) ?? false;
      if (endsFile) i += 1;
      hunk.ops.push({ kind, line: endsFile ? row.slice(1) : `${row.slice(1)}\n` });
      if (kind !== '+') olds += 1;
      if (kind !== '-') news += 1;
    }
    if (olds !== oldCount || news !== newCount) throw new Error('the diff ends inside a hunk (cut short?)');
    hunks.push(hunk);
  }
  return hunks;
}

/** `before` with `diff` applied; throws when `before` is not the text the diff was made from. */
export function applyUnifiedDiff(before: string, diff: string): string {
  const old = splitKeepingNewlines(before);
  const out: string[] = [];
  let at = 0;
  for (const hunk of parseHunks(diff)) {
    if (hunk.oldIndex < at || hunk.oldIndex > old.length) throw new Error('the file has changed since the diff was made');
    out.push(...old.slice(at, hunk.oldIndex));
    at = hunk.oldIndex;
    for (const op of hunk.ops) {
      if (op.kind === '+') {
        out.push(op.line);
        continue;
      }
      if (old[at] !== op.line) throw new Error(`the file has changed since the diff was made (line ${at + 1} differs)`);
      if (op.kind === ' ') out.push(op.line);
      at += 1;
    }
  }
  out.push(...old.slice(at));
  return out.join('');
}
