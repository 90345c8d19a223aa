/**
 * What a tool call did, in a person's words, for its card's line: "Ran npm test", "Read src/app.ts",
 * "Searched for “foo” in *.ts", "Edited src/x.ts", an MCP tool "add (calc)". The one home for these
 * words: every tool the service itself offers (agent/tools/builtin, memory, todo) is worded here; a
 * custom tool, or one this page does not know, keeps its name. Pure (no DOM), unit-tested in Node; in
 * protocol/ (s26) so the service's push of a prompt asks in the same words as the page's card.
 */
import { shortened } from './code-points';

/** Where the call is: asked for (waiting, denied, failed before it did anything), under way, or done. */
export type ToolPhase = 'asked' | 'doing' | 'done';

/** A piece of the words: `code` pieces are what the call acted on (a path, a command), shown as code. */
export interface WordPart {
  text: string;
  code?: boolean;
}

export interface ToolWords {
  /** "Ran", "Searching for", or the tool's own name (`code`, for a tool without words). */
  verb: WordPart;
  /** What it acted on, possibly empty. */
  subject: WordPart[];
}

/** What a finished call's result adds to its words. */
export interface ToolWordsResult {
  /** write_file made the file ("Created"). */
  newFile?: boolean;
}

/** A subject longer than this is cut (the card's line ellipsises it again to the screen's width). */
const SUBJECT_CHARS = 80;
/** Arguments shown, first found, as what a tool without words acted on. */
const SUBJECT_KEYS = ['path', 'command', 'pattern', 'query', 'url', 'name'];

type Verbs = Record<ToolPhase, string>;
const verbs = (asked: string, doing: string, done: string): Verbs => ({ asked, doing, done });

interface Wording {
  verbs: Verbs | ((args: Record<string, unknown>, result: ToolWordsResult) => Verbs);
  subject(args: Record<string, unknown>): WordPart[];
}

const READ = verbs('Read', 'Reading', 'Read');
const WRITE = verbs('Write', 'Writing', 'Wrote');
const CREATE = verbs('Create', 'Creating', 'Created');
const RECALL = verbs('Search memory for', 'Searching memory for', 'Searched memory for');
const LIST_MEMORIES = verbs('List memories', 'Listing memories', 'Listed memories');

const WORDINGS: Record<string, Wording> = {
  read_file: { verbs: READ, subject: (args) => [...path(args.path), ...lineRange(args.offset, args.limit)] },
  write_file: { verbs: (_args, result) => (result.newFile ? CREATE : WRITE), subject: (args) => path(args.path) },
  edit_file: {
    verbs: verbs('Edit', 'Editing', 'Edited'),
    subject: (args) => [...path(args.path), ...(args.replace_all === true ? [{ text: ', every match' }] : [])],
  },
  list_directory: { verbs: verbs('List', 'Listing', 'Listed'), subject: (args) => folder(args.path) },
  search_files: {
    verbs: verbs('Search for', 'Searching for', 'Searched for'),
    subject: (args) => [
      ...quoted(args.pattern),
      ...(text(args.glob) ? [{ text: ' in ' }, { text: shortened(text(args.glob), SUBJECT_CHARS), code: true }] : []),
      ...(text(args.path) && text(args.path) !== '.' ? [{ text: text(args.glob) ? ' under ' : ' in ' }, ...path(args.path)] : []),
      ...(args.ignore_case === true ? [{ text: ', any case' }] : []),
    ],
  },
  run_command: {
    verbs: verbs('Run', 'Running', 'Ran'),
    subject: (args) => {
      const line = commandLine(args.command);
      return [...(line ? [{ text: oneLine(line), code: true }] : []), ...(text(args.cwd) && text(args.cwd) !== '.' ? [{ text: ' in ' }, ...path(args.cwd)] : [])];
    },
  },
  remember: { verbs: verbs('Remember', 'Remembering', 'Remembered'), subject: (args) => (text(args.content) ? [{ text: `“${oneLine(text(args.content))}”` }] : []) },
  recall: { verbs: (args) => (text(args.query).trim() ? RECALL : LIST_MEMORIES), subject: (args) => (text(args.query).trim() ? quoted(args.query) : []) },
  forget: { verbs: verbs('Forget', 'Forgetting', 'Forgot'), subject: (args) => (text(args.id) ? [{ text: 'memory ' }, { text: text(args.id), code: true }] : []) },
  todo: { verbs: verbs('Update the plan', 'Updating the plan', 'Updated the plan'), subject: () => [] },
};

/** The words of a call of `tool` with `args` in `phase`. */
export function toolWords(tool: string, args: unknown, phase: ToolPhase, result: ToolWordsResult = {}): ToolWords {
  const given = isRecord(args) ? args : {};
  const wording = Object.hasOwn(WORDINGS, tool) ? WORDINGS[tool] : undefined;
  if (wording) {
    const chosen = typeof wording.verbs === 'function' ? wording.verbs(given, result) : wording.verbs;
    return { verb: { text: chosen[phase] }, subject: wording.subject(given) };
  }
  return { verb: { text: toolLabel(tool), code: !tool.includes('.') }, subject: anySubject(given) };
}

/**
 * A permission prompt's question in words: "Run `npm test`?", "Edit `src/x.ts`?"; a tool without words
 * "Allow `custom_tool` to run?" (its name, as the card's line keeps it).
 */
export function askWords(tool: string, args: unknown): WordPart[] {
  const words = toolWords(tool, args, 'asked');
  if (words.verb.code || tool.includes('.')) return [{ text: 'Allow ' }, words.verb, { text: ' to run?' }];
  return [...wordsParts(words), { text: '?' }];
}

/**
 * A call undo cannot reverse (`not_reversible`: its tool and `detail`, the command line or the call's
 * arguments in a line): "Ran `make deploy`"; another tool by its name with the detail.
 */
export function unrecordedWords(tool: string, detail: string): ToolWords {
  if (tool === 'run_command') return toolWords(tool, { command: detail }, 'done');
  return { verb: { text: toolLabel(tool), code: !tool.includes('.') }, subject: detail.trim() ? [{ text: shortened(oneLine(detail), SUBJECT_CHARS), code: true }] : [] };
}

/** The argument a built-in tool's recorded subject is (a permission's `subject`): its command line or its workspace path. */
const SUBJECT_ARGUMENT: Record<string, string> = { run_command: 'command', read_file: 'path', write_file: 'path', edit_file: 'path', list_directory: 'path' };

/**
 * The words of a call known by its recorded subject alone (the audit log's permission answers), as its
 * card said them; undefined for a tool whose subject is not one of its arguments. No subject: the verb alone.
 */
export function recordedWords(tool: string, subject: unknown, phase: ToolPhase): ToolWords | undefined {
  if (!Object.hasOwn(SUBJECT_ARGUMENT, tool)) return undefined;
  return toolWords(tool, typeof subject === 'string' ? { [SUBJECT_ARGUMENT[tool]!]: subject } : {}, phase);
}

/** Pieces of words as one line of text. */
export function partsText(parts: readonly WordPart[]): string {
  return parts.map((part) => part.text).join('');
}

/** The words as one line of text ("Ran npm test"), as a screen reader or a test reads them. */
export function wordsText(words: ToolWords): string {
  return partsText(wordsParts(words));
}

/** The words as one row of pieces: the verb, then what it acted on. */
export function wordsParts(words: ToolWords): WordPart[] {
  return words.subject.length ? [words.verb, { text: ' ' }, ...words.subject] : [words.verb];
}

/**
 * A tool's name for a person: an MCP tool (`<server>.<tool>`, src/agent/tools/mcp.ts) as "<tool>
 * (<server>)", one of VS Code's (`vscode.<name>`) as "<name> (VS Code)", any other as it is.
 */
export function toolLabel(tool: string): string {
  const dot = tool.indexOf('.');
  if (dot <= 0 || dot === tool.length - 1) return tool;
  const source = tool.slice(0, dot);
  return `${tool.slice(dot + 1)} (${source === 'vscode' ? 'VS Code' : source})`;
}

function path(value: unknown): WordPart[] {
  return text(value) ? [{ text: shortened(text(value), SUBJECT_CHARS), code: true }] : [];
}

/** list_directory's folder: the workspace's own when none (or `.`) is given. */
function folder(value: unknown): WordPart[] {
  return text(value) && text(value) !== '.' ? path(value) : [{ text: 'the workspace folder' }];
}

function quoted(value: unknown): WordPart[] {
  return text(value) ? [{ text: '“' }, { text: shortened(oneLine(text(value)), SUBJECT_CHARS), code: true }, { text: '”' }] : [];
}

/** read_file's `offset` (1-based first line) and `limit` (lines) as ", lines 10–29" or ", from line 10". */
function lineRange(offset: unknown, limit: unknown): WordPart[] {
  const first = typeof offset === 'number' && Number.isInteger(offset) && offset > 1 ? offset : 1;
  const count = typeof limit === 'number' && Number.isInteger(limit) && limit > 0 ? limit : undefined;
  if (count !== undefined) return [{ text: count === 1 ? `, line ${first}` : `, lines ${first}–${first + count - 1}` }];
  return first > 1 ? [{ text: `, from line ${first}` }] : [];
}

/** run_command's `command`: a shell line, or `[program, ...arguments]` shown as one line. */
export function commandLine(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return value.map(shellWord).join(' ');
  return '';
}

/** An argument as a shell would need it written: as it is, or in single quotes. */
function shellWord(item: string): string {
  return /^[\w./:=@%+,-]+$/.test(item) ? item : `'${item.replace(/'/g, `'\\''`)}'`;
}

/** The first line, cut, with "…" when more follows. */
function oneLine(value: string): string {
  const lines = value.trim().split('\n');
  const first = shortened(lines[0]!, SUBJECT_CHARS);
  return lines.length > 1 && !first.endsWith('…') ? `${first} …` : first;
}

/** A tool without words: its first path, command, pattern... argument, as before. */
function anySubject(args: Record<string, unknown>): WordPart[] {
  for (const key of SUBJECT_KEYS) {
    const value = key === 'command' ? commandLine(args[key]) : Array.isArray(args[key]) ? commandLine(args[key]) : text(args[key]);
    if (value.trim()) return [{ text: shortened(oneLine(value), SUBJECT_CHARS), code: true }];
  }
  return [];
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
