/**
 * A tool call in the conversation: a card whose one line says what the call did in words ("Ran npm
 * test", "Edited src/x.ts", tool-words.ts), an edit's size ("+12 −3") and how it ended, and which opens
 * on what the call did (docs/protocol.md, "Tool results"): a command first (one line, the whole a tap
 * away, its exit status beside it), then its output, its start and end with the middle a tap away; the
 * applied diff of write_file / edit_file, drawn as a prompt's diff; what was read or found, short; a
 * denial's reason. Arguments read as `key: value`, long or multi-line strings as blocks, never JSON.
 */
import { firstUnits } from '../../protocol/code-points';
import type { ToolResultDetail } from '../../protocol';
import { parseUnifiedDiff } from './diff-hunks';
import { diffStats } from './diff-stats';
import { h } from './dom';
import { renderPreview } from './preview-view';
import { commandLine, toolWords, type ToolPhase, type ToolWordsResult } from '../../protocol/tool-words';
import { wordNodes } from './word-nodes';

export type ToolStatus = 'running' | 'ok' | 'failed' | 'denied';

/** What a finished call gave: its stored text (the model's) and what it did, for people. */
export interface ToolResult {
  content?: string;
  detail?: ToolResultDetail;
}

/** Running: the line's words say it ("Running npm test"); the status is drawn once there is one to add. */
const STATUS_LABEL: Record<ToolStatus, string> = { running: '', ok: 'ok', failed: 'failed', denied: 'denied' };
/** A running call whose permission prompt waits for a person. */
const WAITING_LABEL = 'waiting for you';

/** A string argument longer than this, or with a line break, is shown as a block. */
const INLINE_ARGUMENT_CHARS = 60;
/** Characters of a block argument shown before "Show all". */
const BLOCK_ARGUMENT_CHARS = 1500;
/** A command's output: lines shown from its start and its end while the middle is folded. */
export const OUTPUT_HEAD_LINES = 8;
export const OUTPUT_TAIL_LINES = 8;
/** What a reading tool found: the first lines, the rest a tap away. */
export const FOUND_LINES_SHOWN = 6;
/** Tools whose output is what was read or found. */
const READING_TOOLS = new Set(['read_file', 'search_files', 'list_directory']);
/** Arguments a file tool's applied diff already shows. */
const SHOWN_BY_DIFF = new Set(['content', 'old_string', 'new_string']);
/** run_command's line, shown first in its card. */
const SHOWN_AS_COMMAND = new Set(['command']);
/** A command longer than this (or of several lines) may be cut on a phone's line: its row opens on the whole. */
const COMMAND_LINE_CHARS = 24;

export class ToolCard {
  readonly element: HTMLElement;
  /** The call's id, when known (stored calls and live events carry it). */
  callId: string | undefined;
  /** Shown from history without a result: "failed" unless its turn turns out to be still running. */
  unresolved = false;
  /** Called after its status changed (a call shown failed from history may be running, and waiting, again). */
  onStatus?: () => void;
  private readonly status: HTMLElement;
  private readonly words: HTMLElement;
  private readonly size: HTMLElement;
  private readonly result: HTMLElement;
  /** run_command's command line and, once it ended, its exit status. */
  private readonly command: { row: HTMLElement; exit: HTMLElement } | undefined;
  private args: HTMLElement;
  private wordsResult: ToolWordsResult = {};

  constructor(
    readonly tool: string,
    readonly argumentsGiven: unknown,
  ) {
    this.status = h('span', { class: 'tool-status', 'data-status': 'running' }, STATUS_LABEL.running);
    this.words = h('span', { class: 'tool-words' });
    this.size = h('span', { class: 'tool-size', hidden: true });
    this.result = h('div', { class: 'tool-result', hidden: true });
    this.command = tool === 'run_command' ? commandRow(argumentsGiven) : undefined;
    this.args = argumentsView(argumentsGiven, this.command ? SHOWN_AS_COMMAND : undefined);
    this.element = h(
      'details',
      { class: 'tool-card', 'data-tool': tool },
      h('summary', {}, h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, '⚙'), this.words, this.size, this.status),
      h('div', { class: 'tool-body' }, this.command?.row, this.result, this.args, h('div', { class: 'tool-raw-name' }, 'Tool: ', h('code', {}, tool))),
    );
    this.showWords('doing');
  }

  /** The call still running: whether it waits for a person's answer to its permission prompt ("waiting for you"). */
  get running(): boolean {
    return this.element.dataset.status === undefined;
  }

  /**
   * While its permission prompt waits the call has not started: the card says "waiting for you", and
   * "running…" again once answered (allowed). A finished card keeps its outcome.
   */
  setWaiting(waiting: boolean): void {
    if (!this.running || (this.status.dataset.status === 'waiting') === waiting) return;
    this.status.dataset.status = waiting ? 'waiting' : 'running';
    this.status.textContent = waiting ? WAITING_LABEL : STATUS_LABEL.running;
    this.showWords(waiting ? 'asked' : 'doing');
  }

  setStatus(status: ToolStatus, result: ToolResult = {}): void {
    this.unresolved = false;
    this.status.dataset.status = status;
    const exit = result.detail?.kind === 'command' ? exitText(result.detail) : '';
    this.status.textContent = exit && status !== 'ok' ? `${STATUS_LABEL[status]} · ${exit}` : STATUS_LABEL[status];
    if (status === 'running') delete this.element.dataset.status;
    else this.element.dataset.status = status;
    if (this.command) this.command.exit.textContent = result.detail?.kind === 'command' ? exit : '';
    const shown = resultView(this.tool, status, result, this.command !== undefined);
    this.result.replaceChildren(...shown);
    this.result.hidden = shown.length === 0;
    const diff = result.detail?.kind === 'diff' && status === 'ok' ? result.detail : undefined;
    this.wordsResult = { newFile: diff?.new_file };
    if (diff) {
      const parsed = parseUnifiedDiff(diff.diff);
      this.size.replaceChildren(diffStats(parsed.added, parsed.removed, { cut: diff.truncated }));
    } else this.size.replaceChildren();
    this.size.hidden = diff === undefined;
    // A call that ended by itself did what it says; a refused one, or one that failed before acting, was only asked for.
    this.showWords(status === 'running' ? 'doing' : status === 'ok' || result.detail?.kind === 'command' ? 'done' : 'asked');
    // The diff shows the new text: the arguments keep only what it does not (the path, replace_all).
    if (result.detail?.kind === 'diff') this.args.replaceWith((this.args = argumentsView(this.argumentsGiven, SHOWN_BY_DIFF)));
    this.onStatus?.();
  }

  /** The card's line in words: the verb (or the tool's own name) and what it acted on, cut with an ellipsis. */
  private showWords(phase: ToolPhase): void {
    const words = toolWords(this.tool, this.argumentsGiven, phase, this.wordsResult);
    const verb = words.verb.code ? h('code', { class: 'tool-verb tool-name' }, words.verb.text) : h('span', { class: 'tool-verb' }, words.verb.text);
    const subject = words.subject.length ? h('span', { class: 'tool-subject' }, ...wordNodes(words.subject)) : null;
    this.words.replaceChildren(verb, subject ? ' ' : '', subject ?? '');
  }
}

/**
 * run_command's line, first in its card: monospace, one line cut with an ellipsis; a long or multi-line
 * one opens (a tap) on the whole. Its exit status sits beside it once it ended.
 */
function commandRow(args: unknown): { row: HTMLElement; exit: HTMLElement } | undefined {
  const line = isRecord(args) ? commandLine(args.command) : '';
  if (!line.trim()) return undefined;
  const text = h('code', { class: 'tool-command-text' }, line);
  const exit = h('span', { class: 'tool-exit' });
  const long = line.includes('\n') || line.length > COMMAND_LINE_CHARS;
  const row = long ? h('details', { class: 'tool-command' }, h('summary', { title: 'Show the whole command' }, text, exit)) : h('div', { class: 'tool-command' }, text, exit);
  return { row, exit };
}

/** What the card shows of a finished call, by what the tool did. */
function resultView(tool: string, status: ToolStatus, result: ToolResult, exitShown: boolean): HTMLElement[] {
  const content = result.content ?? '';
  if (status === 'denied') return [h('div', { class: 'tool-denied-reason', role: 'note' }, content || 'The tool did not run.')];
  const detail = result.detail;
  if (detail?.kind === 'diff') {
    return [h('div', { class: 'tool-output-label' }, content || 'Applied'), renderPreview(detail, {})];
  }
  if (detail?.kind === 'command') {
    const output = foldedOutput(withoutStatusLine(content), OUTPUT_HEAD_LINES, OUTPUT_TAIL_LINES);
    return exitShown ? [output] : [h('div', { class: 'tool-exit' }, exitText(detail)), output];
  }
  if (!content) return [];
  if (READING_TOOLS.has(tool) && status === 'ok') return [foldedOutput(content, FOUND_LINES_SHOWN, 0)];
  return [h('div', { class: 'tool-output-label' }, status === 'failed' ? 'Error' : 'Result'), foldedOutput(content, OUTPUT_HEAD_LINES, OUTPUT_TAIL_LINES)];
}

/** "exit code 1", "timed out (the time limit)", "killed by SIGTERM". */
function exitText(detail: Extract<ToolResultDetail, { kind: 'command' }>): string {
  if (detail.timed_out) return 'stopped at its time limit';
  if (detail.signal) return `killed by ${detail.signal}`;
  return detail.exit_code === null ? 'stopped' : `exit code ${detail.exit_code}`;
}

/**
 * run_command's text ends with how it ended (`[exit code 1]`), which the card shows from `detail`; blank
 * lines before and after the output (npm's first line) only push it down a phone's screen.
 */
export function withoutStatusLine(text: string): string {
  return (
    text
      // The inner runs stop at a '[' too: tried from every '[' of an output full of them, `[^\]]*` ran to the
      // end each time, quadratically (a command's output is anyone's text).
      .replace(/\n?\[(exit code -?\d+|timed out after [^[\]]*|cancelled: [^[\]]*|killed by signal [^[\]]*)\]$/, '')
      .replace(/^(?:[ \t]*\r?\n)+/, '')
      .trimEnd()
  );
}

/**
 * Output whose middle (or, with `tail` 0, whose end) is folded behind "Show all N lines": a long log's
 * start and end are what is read first on a phone.
 */
function foldedOutput(text: string, head: number, tail: number): HTMLElement {
  const pre = h('pre', { class: 'tool-output' });
  const lines = text.split('\n');
  const hidden = lines.length - head - tail;
  if (hidden <= 1) {
    pre.textContent = text;
    return pre;
  }
  const show = h('button', { type: 'button', class: 'button secondary tool-output-more' }, `Show all ${lines.length} lines`);
  pre.append(lines.slice(0, head).join('\n'), h('span', { class: 'tool-output-fold' }, `\n… ${hidden} more line${hidden === 1 ? '' : 's'} …\n`), lines.slice(lines.length - tail).join('\n'));
  show.addEventListener('click', () => {
    pre.textContent = text;
    show.remove();
  });
  return h('div', { class: 'tool-output-folded' }, pre, show);
}

/** `key: value` rows; long or multi-line strings, objects and arrays as blocks. */
function argumentsView(args: unknown, omit: ReadonlySet<string> = new Set()): HTMLElement {
  if (!isRecord(args)) return h('div', { class: 'tool-args' }, argumentBlock(typeof args === 'string' ? args : String(args)));
  const rows = Object.entries(args)
    .filter(([key]) => !omit.has(key))
    .map(([key, value]) => {
      const inline = typeof value === 'string' ? value.length <= INLINE_ARGUMENT_CHARS && !value.includes('\n') : typeof value !== 'object' || value === null;
      const text = typeof value === 'string' ? value : JSON.stringify(value, null, 1);
      return inline
        ? h('div', { class: 'tool-arg', 'data-key': key }, h('span', { class: 'tool-arg-key' }, `${key}: `), h('code', { class: 'tool-arg-value' }, text))
        : h('div', { class: 'tool-arg', 'data-key': key }, h('div', { class: 'tool-arg-key' }, `${key}:`), argumentBlock(text));
    });
  // Every argument shown elsewhere (a command's line): nothing to say here.
  if (rows.length === 0 && omit.size > 0) return h('div', { class: 'tool-args', hidden: true });
  return h('div', { class: 'tool-args' }, ...(rows.length ? rows : [h('span', { class: 'tool-arg-none' }, 'no arguments')]));
}

function argumentBlock(text: string): HTMLElement {
  const pre = h('pre', { class: 'tool-arg-block' }, text.length > BLOCK_ARGUMENT_CHARS ? `${firstUnits(text, BLOCK_ARGUMENT_CHARS)}…` : text);
  if (text.length <= BLOCK_ARGUMENT_CHARS) return pre;
  const show = h('button', { type: 'button', class: 'button secondary tool-output-more' }, `Show all ${text.length} characters`);
  show.addEventListener('click', () => {
    pre.textContent = text;
    show.remove();
  });
  return h('div', {}, pre, show);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
