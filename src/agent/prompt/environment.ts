import os from 'node:os';
import { displayName, readsAs } from '../../protocol';
import { firstCodePoints } from '../../protocol/code-points';
import { COMMAND_SHELL } from '../tools/builtin/run-command';
import type { GitSummary } from './git-status';

/** The window assumed for a model nobody gave one for (prices' `context_window`, or the server's own figure). */
export const DEFAULT_CONTEXT_WINDOW_TOKENS = 32_000;
/** Workspace folders whose git status is asked each turn; more are listed without it. */
const MAX_GIT_FOLDERS = 4;
/** A device name is the user's text: one line, this many characters at most (code points, the ellipsis of a cut one included). */
const MAX_CLIENT_CHARS = 80;

/** What stays true for a whole conversation: where the agent runs. Part of the system message. */
export interface WorkplaceFacts {
  /** The workspace folders in force. */
  roots: readonly string[];
  model: string;
  /** Tokens, or null when not known (then DEFAULT_CONTEXT_WINDOW_TOKENS is said to be assumed). */
  contextWindow: number | null;
}

/** What changes from one message to the next: the turn's note, after everything the model has seen before. */
export interface MomentFacts {
  /** The workspace folders in force. */
  roots: readonly string[];
  /** Who sent the message, as people read it (`phone (relay), device “Pixel”`, `editor`). */
  client: string;
  /** The client is not the editor: the person may be reading on a small screen. */
  remote: boolean;
  now?: Date;
  /** The branch and changed files of a folder (GitStatusCache.summary). */
  git: (folder: string) => Promise<GitSummary | undefined>;
}

/** The heading of the turn's note; the system prompt tells the model that the service writes it, not the user. */
export const MOMENT_HEADING = '# Now (a note from the service, not from the user)';

/** A line that reads as the note's heading (`# Now`, any level, case or indentation), once look-alikes are folded (readsAs). */
const NOTE_HEADING = /^\s*#+\s*now\b/i;
/** What may start a heading: `#` and the characters NFKC folds into it (full-width, small). */
const HASH_LIKE = /[#\uff03\ufe5f]/;
/** What a model may take for the end of a line (JavaScript's `m` flag knows only the first four). */
const LINE_BREAK = /(\r\n|[\n\r\u2028\u2029\u0085\v\f])/;

/**
 * The conversation as the model reads it, with the note's heading escaped (`\# Now`) wherever a user
 * message holds one: a webhook's post or a pasted text must not pass for the service's own note (who
 * sent the message, what git says), which only the service's last message may carry. A heading written
 * with look-alikes (`#\u00a0Now`, `＃ Now`, `# N\u200bow`) reads the same to the model: it is escaped too.
 * Stored as typed.
 */
export function withoutForgedNotes<T extends { role: string; content: string; moment?: true }>(messages: readonly T[]): T[] {
  return messages.map(readableMessage);
}

/** One message of withoutForgedNotes (the agent's request makes it in its one pass over the history). */
export function readableMessage<T extends { role: string; content: string; moment?: true }>(message: T): T {
  if (message.role !== 'user' || message.moment) return message;
  // A short text is scanned faster than it is looked up.
  if (message.content.length < KEPT_FROM_CHARS) return withoutForgedNote(message);
  let readable = readableMessages.get(message) as T | undefined;
  if (readable === undefined) {
    readable = withoutForgedNote(message);
    readableMessages.set(message, readable);
  }
  return readable;
}

/**
 * Each user message as withoutForgedNotes gives it, by the message: a transcript's messages are kept
 * from step to step (transcript.ts Transcripts), and each step scanned all their text again (pasted
 * files, the editor's context). A message is not changed once made (a changed one is a new object).
 */
const readableMessages = new WeakMap<object, object>();
/** Messages this long at least are kept in readableMessages. */
const KEPT_FROM_CHARS = 256;

function withoutForgedNote<T extends { content: string }>(message: T): T {
  if (!HASH_LIKE.test(message.content)) return message;
  const content = message.content
    .split(LINE_BREAK)
    .map((part, i) => (i % 2 === 0 ? escapedHeading(part) : part))
    .join('');
  return content === message.content ? message : { ...message, content };
}

/** The line with a backslash before its first `#`-like character when it reads as the note's heading. */
function escapedHeading(line: string): string {
  if (!HASH_LIKE.test(line) || !NOTE_HEADING.test(readsAs(line))) return line;
  const at = line.search(HASH_LIKE);
  return `${line.slice(0, at)}\\${line.slice(at)}`;
}

/**
 * The environment block of the system message: what stays true between turns (OS, shell, workspace
 * folders, model), so that the system message, and with it the provider's cache of the conversation,
 * stays the same from one request to the next. Nothing secret: never an environment variable, a token
 * or a key.
 */
export function environmentBlock(facts: WorkplaceFacts): string {
  const lines = [
    `- Operating system: ${os.type()} ${os.release()} (${process.arch}); run_command's shell: ${COMMAND_SHELL}`,
    ...workspaceLines(facts.roots),
    `- Model: ${facts.model}; context window: ${facts.contextWindow === null ? `not known, assume about ${DEFAULT_CONTEXT_WINDOW_TOKENS} tokens` : `${facts.contextWindow} tokens`}`,
  ];
  return `# Environment\n${lines.join('\n')}`;
}

/**
 * The turn's note: the date and time, git's branch and changed files of each folder (asked within
 * GIT_TIMEOUT_MS), and who sent the message. Sent last in each request of the turn and never stored, so
 * everything before it is the same prefix as in the previous request (what providers cache).
 */
export async function momentNote(facts: MomentFacts): Promise<string> {
  const now = facts.now ?? new Date();
  const git = await Promise.all(facts.roots.slice(0, MAX_GIT_FOLDERS).map((root) => facts.git(root)));
  const told: NoteParts = { time: localTime(now), roots: facts.roots, git, client: facts.client, remote: facts.remote };
  const kept = lastNote;
  if (kept && sameNote(kept.parts, told)) return kept.text;
  const text = noteText(told);
  lastNote = { parts: told, text };
  return text;
}

/** What a turn's note says: the local time, git's answers for the roots, who sent the message. */
export interface NoteParts {
  time: string;
  roots: readonly string[];
  git: readonly (GitSummary | undefined)[];
  client: string;
  remote: boolean;
}

/**
 * The last note made and what it says (momentNote): the next turn's is most often the same (the same
 * minute, git's kept answer, the same sender), and made again it was lines, a join and the sender's
 * name folded (about 0.008 ms of a warm turn, issue 25).
 */
let lastNote: { parts: NoteParts; text: string } | undefined;

function sameNote(a: NoteParts, b: NoteParts): boolean {
  return (
    a.time === b.time &&
    a.client === b.client &&
    a.remote === b.remote &&
    // The roots are told by their number alone, which git's answers tell (one a root, MAX_GIT_FOLDERS at most).
    a.git.length === b.git.length &&
    a.git.every((summary, i) => summary === b.git[i] || (summary !== undefined && b.git[i] !== undefined && summary.branch === b.git[i].branch && summary.changed === b.git[i].changed))
  );
}

/** The note's text from its parts (momentNote, made afresh). */
export function noteText(parts: NoteParts): string {
  const lines = [
    `- Date and time: ${parts.time}`,
    ...gitLines(parts.roots, parts.git),
    `- This message came from: ${oneLine(parts.client)}${parts.remote ? ' (the user may be away from the editor, reading on a small screen: keep the answer short)' : ''}`,
  ];
  return `${MOMENT_HEADING}\n${lines.join('\n')}`;
}

function workspaceLines(roots: readonly string[]): string[] {
  if (roots.length === 0) return ['- Workspace: none open (file tools have nothing to work on)'];
  return roots.map((root, i) => (roots.length > 1 ? `- Workspace folder ${i + 1}: ${root}` : `- Workspace folder: ${root}`));
}

function gitLines(roots: readonly string[], git: readonly (GitSummary | undefined)[]): string[] {
  return roots.slice(0, MAX_GIT_FOLDERS).map((_root, i) => {
    const summary = git[i];
    const where = roots.length > 1 ? `- Git in workspace folder ${i + 1}` : '- Git';
    if (!summary) return `${where}: not a git repository, or git is not available`;
    const changed = summary.changed === 'many' ? 'many changed files' : `${summary.changed} changed file${summary.changed === 1 ? '' : 's'}`;
    return `${where}: branch ${summary.branch}, ${changed}`;
  });
}

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
/** The zone's name, asked of Intl once per TZ setting (making a formatter costs about 0.1 ms a turn). */
let zoneName: { tz: string | undefined; name: string } | undefined;

function timeZoneName(): string {
  if (zoneName === undefined || zoneName.tz !== process.env.TZ) zoneName = { tz: process.env.TZ, name: Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time' };
  return zoneName.name;
}

/**
 * The last time told, by its minute since the epoch and TZ: every turn of a minute says the same (every
 * zone's offset today is whole minutes, so a minute since the epoch is one local minute).
 */
let lastTime: { minute: number; tz: string | undefined; text: string } | undefined;

/** `Thursday 2026-11-26 06:31 (Europe/Paris, UTC+01:00)`: the user's local time, which the model cannot know. */
export function localTime(now: Date): string {
  const minute = Math.floor(now.getTime() / 60_000);
  if (lastTime !== undefined && lastTime.minute === minute && lastTime.tz === process.env.TZ) return lastTime.text;
  const text = formattedTime(now);
  lastTime = { minute, tz: process.env.TZ, text };
  return text;
}

function formattedTime(now: Date): string {
  const zone = timeZoneName();
  const offset = -now.getTimezoneOffset();
  const sign = offset >= 0 ? '+' : '-';
  const hours = String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0');
  const minutes = String(Math.abs(offset) % 60).padStart(2, '0');
  const pad = (n: number) => String(n).padStart(2, '0');
  const day = WEEKDAYS[now.getDay()];
  return `${day} ${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())} ${pad(now.getHours())}:${pad(now.getMinutes())} (${zone}, UTC${sign}${hours}:${minutes})`;
}

function oneLine(text: string): string {
  const line = displayName(text.replace(/\s+/g, ' ')).trim();
  // Its first 80 characters and an ellipsis, as before code points counted (an ASCII label cuts as it did).
  const kept = firstCodePoints(line, MAX_CLIENT_CHARS);
  return kept.length === line.length ? line : `${kept}\u2026`;
}
