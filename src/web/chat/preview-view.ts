/**
 * What a permission request would do, drawn from its `preview` (docs/protocol.md, "Previews") for a
 * small screen: a diff with line numbers and +/- colours, long lines wrapped, cut after a screenful with
 * "Show all"; a command line whole, with its folder, time limit and warnings; other tools' arguments as
 * text; or the error the call would give. Colours come from theme variables (media/chat.css), so the
 * editor's theme applies in the webview.
 */
import type { PermissionPreview } from '../../protocol';
import { countLines, parseUnifiedDiff, type DiffLine, type ParsedDiff } from './diff-hunks';
import { diffStats } from './diff-stats';
import { formatArguments, h } from './dom';

/** Diff lines shown before "Show all": about two phone screens. */
export const DIFF_LINES_SHOWN = 80;

export interface PreviewOptions {
  /** The editor can open the change in its own diff editor (absent on the phone). */
  showDiff?: () => void;
}

export function renderPreview(preview: PermissionPreview | undefined, args: Record<string, unknown>, options: PreviewOptions = {}): HTMLElement {
  switch (preview?.kind) {
    case 'diff':
      return diffView(preview, options);
    case 'command':
      return commandView(preview);
    case 'arguments':
      return h('div', { class: 'preview', 'data-kind': 'arguments' }, h('pre', { class: 'preview-arguments' }, preview.text));
    case 'error':
      return h(
        'div',
        { class: 'preview', 'data-kind': 'error' },
        h('div', { class: 'preview-error-label' }, 'This call would fail:'),
        h('pre', { class: 'preview-error' }, preview.message),
        h('pre', { class: 'preview-arguments' }, formatArguments(args, 2000)),
      );
    default:
      // An older service sends no preview: the arguments as they are.
      return h('div', { class: 'preview', 'data-kind': 'raw' }, h('pre', { class: 'tool-args' }, formatArguments(args, 2000)));
  }
}

function commandView(preview: Extract<PermissionPreview, { kind: 'command' }>): HTMLElement {
  const warnings = preview.warnings.length
    ? h('ul', { class: 'preview-warnings', role: 'alert' }, ...preview.warnings.map((w) => h('li', {}, h('span', { class: 'warning-icon', 'aria-hidden': 'true' }, '⚠ '), w)))
    : null;
  return h(
    'div',
    { class: 'preview', 'data-kind': 'command' },
    warnings,
    // The whole line, wrapped: a command cut short hides exactly the part that matters.
    h('pre', { class: 'preview-command' }, preview.command),
    h(
      'div',
      { class: 'preview-meta' },
      // "in the workspace folder", not "in . (the workspace folder)": the dot told a person nothing (s31).
      h('span', { class: 'preview-cwd' }, preview.cwd === '.' ? 'in the workspace folder' : `in ${preview.cwd}`),
      h('span', { class: 'preview-timeout' }, `time limit ${preview.timeout_seconds} s (stopped if still running)`),
    ),
  );
}

function diffView(preview: Extract<PermissionPreview, { kind: 'diff' }>, options: PreviewOptions): HTMLElement {
  const parsed = parseUnifiedDiff(preview.diff);
  const total = countLines(parsed);
  const body = h('div', { class: 'diff-body' });
  const head = h(
    'div',
    { class: 'diff-file' },
    h('span', { class: 'diff-path' }, preview.path),
    preview.new_file ? h('span', { class: 'diff-new-file badge' }, 'new file') : null,
    diffStats(parsed.added, parsed.removed, { cut: preview.truncated }),
    options.showDiff ? h('button', { type: 'button', class: 'button secondary diff-open', onclick: () => options.showDiff?.() }, 'Show diff') : null,
  );
  const view = h('div', { class: 'preview diff', 'data-kind': 'diff' }, head, body);
  const draw = (limit: number) => {
    body.replaceChildren(...parsed.notes.map((note) => h('div', { class: 'diff-note' }, note)), ...hunkElements(parsed, limit));
    if (total > limit) {
      const more = total - limit;
      const showAll = h('button', { type: 'button', class: 'button secondary diff-show-all' }, 'Show all');
      showAll.addEventListener('click', () => draw(Infinity));
      body.append(h('div', { class: 'diff-cut' }, h('span', {}, `… ${more} more line${more === 1 ? '' : 's'} not shown`), showAll));
    }
    if (preview.truncated) body.append(h('div', { class: 'diff-truncated', role: 'note' }, 'The service cut this diff: the change is longer than shown here.'));
  };
  draw(DIFF_LINES_SHOWN);
  if (total === 0 && parsed.notes.length === 0) body.append(h('div', { class: 'diff-note' }, "No change to the file's content."));
  return view;
}

/** The hunks' lines, up to `limit` lines in all. */
function hunkElements(parsed: ParsedDiff, limit: number): HTMLElement[] {
  const out: HTMLElement[] = [];
  let left = limit;
  for (const hunk of parsed.hunks) {
    if (left <= 0) break;
    const lines = hunk.lines.slice(0, left);
    left -= lines.length;
    out.push(h('div', { class: 'diff-hunk' }, h('div', { class: 'diff-hunk-header' }, hunk.header), ...lines.map(diffLineElement)));
  }
  return out;
}

const SIGN: Record<DiffLine['kind'], string> = { add: '+', del: '-', context: ' ', note: '' };

/** One diff line with its old and new numbers: the prompt card's, undo's and the Changes view's (changes-view.ts). */
export function diffLineElement(line: DiffLine): HTMLElement {
  const marks = [
    line.crlf ? h('span', { class: 'diff-eol', title: 'CRLF line ending' }, '␍') : null,
    line.noNewline ? h('span', { class: 'diff-eol', title: 'No newline at end of file' }, '⊘ no newline') : null,
  ];
  return h(
    'div',
    { class: 'diff-line', 'data-kind': line.kind },
    h('span', { class: 'diff-old', 'aria-hidden': line.oldLine === undefined ? 'true' : undefined }, line.oldLine === undefined ? '' : String(line.oldLine)),
    h('span', { class: 'diff-new', 'aria-hidden': line.newLine === undefined ? 'true' : undefined }, line.newLine === undefined ? '' : String(line.newLine)),
    h('span', { class: 'diff-sign', 'aria-hidden': 'true' }, SIGN[line.kind]),
    h('span', { class: 'diff-text' }, line.text),
    ...marks,
  );
}
