/**
 * A unified diff (`diff -u`, three lines of context) between two texts, as `git apply` and `patch`
 * read it. Lines keep their `\r`, so a CRLF file's diff shows exactly the bytes that change, and a last
 * line without a newline is marked `\ No newline at end of file`.
 */

const CONTEXT = 3;
/**
 * Past this many differing lines, or this much work, the middle is shown as removed and added whole:
 * still exact, not minimal, and a preview never holds the event loop for long.
 */
const MAX_EDIT_DISTANCE = 2000;
const MAX_STEPS = 5_000_000;

type Op = { kind: ' ' | '-' | '+'; line: string };

/** Lines with their `\n` kept, so `a` and `a\n` differ as they do on disk. */
function splitKeepingNewlines(text: string): string[] {
  const lines = text.split('\n').map((line) => `${line}\n`);
  lines[lines.length - 1] = lines[lines.length - 1].slice(0, -1);
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** Myers' shortest edit script between `a` and `b`, or undefined past `MAX_EDIT_DISTANCE` or `MAX_STEPS`. */
function shortestEdit(a: string[], b: string[]): Op[] | undefined {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, MAX_EDIT_DISTANCE);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  // trace[d] holds v[-d-1 .. d+1] as it was before step d: what the walk back needs.
  const trace: Int32Array[] = [];
  let steps = 0;
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]) ? v[offset + k + 1] : v[offset + k - 1] + 1;
      let y = x - k;
      const snakeStart = x;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      steps += x - snakeStart + 1;
      if (steps > MAX_STEPS) return undefined;
      v[offset + k] = x;
      if (x >= n && y >= m) return walkBack(a, b, trace);
    }
  }
  return undefined;
}

function walkBack(a: string[], b: string[], trace: Int32Array[]): Op[] {
  const ops: Op[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = trace.length - 1; d >= 0; d--) {
    const at = (k: number) => trace[d][k + d + 1];
    const k = x - y;
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push({ kind: ' ', line: a[--x] });
      y--;
    }
    if (d > 0) {
      if (x === prevX) ops.push({ kind: '+', line: b[--y] });
      else ops.push({ kind: '-', line: a[--x] });
    }
  }
  return ops.reverse();
}

function editScript(a: string[], b: string[]): Op[] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const middle = shortestEdit(midA, midB) ?? [...midA.map((line) => ({ kind: '-' as const, line })), ...midB.map((line) => ({ kind: '+' as const, line }))];
  const same = (line: string): Op => ({ kind: ' ', line });
  return [...a.slice(0, start).map(same), ...middle, ...a.slice(endA).map(same)];
}

function printLine(op: Op): string {
  if (op.line.endsWith('\n')) return `${op.kind}${op.line}`;
  return `${op.kind}${op.line}\n\\ No newline at end of file\n`;
}

/**
 * The diff turning `before` into `after`; `before` undefined is a new file (`--- /dev/null`), `after`
 * undefined a deleted one (`+++ /dev/null`). Equal texts give the two header lines alone.
 */
export function unifiedDiff(path: string, before: string | undefined, after: string | undefined): string {
  const ops = editScript(splitKeepingNewlines(before ?? ''), splitKeepingNewlines(after ?? ''));
  let out = `--- ${before === undefined ? '/dev/null' : `a/${path}`}\n+++ ${after === undefined ? '/dev/null' : `b/${path}`}\n`;
  // Line numbers (0-based) of each op in the old and the new text.
  const oldAt: number[] = [];
  const newAt: number[] = [];
  let o = 0;
  let n = 0;
  for (const op of ops) {
    oldAt.push(o);
    newAt.push(n);
    if (op.kind !== '+') o++;
    if (op.kind !== '-') n++;
  }
  let i = 0;
  while (i < ops.length) {
    while (i < ops.length && ops[i].kind === ' ') i++;
    if (i === ops.length) break;
    const first = Math.max(0, i - CONTEXT);
    // Extend over changes closer than two contexts apart: they share one hunk.
    let last = i;
    for (let j = i; j < ops.length; j++) {
      if (ops[j].kind !== ' ') last = j;
      else if (j - last > 2 * CONTEXT) break;
    }
    const end = Math.min(ops.length, last + CONTEXT + 1);
    const hunk = ops.slice(first, end);
    const oldCount = hunk.filter((op) => op.kind !== '+').length;
    const newCount = hunk.filter((op) => op.kind !== '-').length;
    const oldStart = oldCount === 0 ? oldAt[first] : oldAt[first] + 1;
    const newStart = newCount === 0 ? newAt[first] : newAt[first] + 1;
    out += `@@ -${oldStart},${oldCount} +${newStart},${newCount} @@\n`;
    out += hunk.map(printLine).join('');
    i = end;
  }
  return out;
}
