/**
 * Making a provider's own text fit an error message: one short line, its first sentence, no stack
 * frames or paths. Secrets are removed by the one redaction module (src/log/redact.ts); nothing a
 * provider says reaches a message without passing through here.
 */
import { shortened, wellFormed } from '../../protocol/code-points';
import { redactVendorText, type VendorSecrets } from '../../log/redact';

export const MAX_DETAIL_LENGTH = 200;

/** One line, secrets removed, well-formed, at most `max` characters (code points). */
export function safeDetail(text: unknown, secrets: VendorSecrets = {}, max = MAX_DETAIL_LENGTH): string {
  const raw = typeof text === 'string' ? text : text === undefined || text === null ? '' : safeStringify(text);
  // Well-formed: a JSON error body's "\ud800" parses to a lone surrogate, and the text may be stored (a webhook's failure).
  return shortened(wellFormed(redactVendorText(raw, secrets).replace(/\s+/g, ' ').trim()), max);
}

/** Longest cause shown to a client: a sentence, not a report. */
export const MAX_CAUSE_LENGTH = 160;
/** Longest provider text kept for the log. */
export const MAX_LOGGED_TEXT_LENGTH = 4000;

// Where a stack trace starts: a frame of Node (`at fn (/path:1:2)`, `at async new X (file:///...)`,
// `at node:internal/...`, `at <anonymous>`, a relative or bundler path `at fn (src/a.js:1:2)`,
// `(webpack:///./src/a.ts:1:2)`), of Java (`at com.x.Y.m(Y.java:42)`), Python's header, or Go's
// goroutine dump.
const STACK_FRAME =
  /(?:^|\s+)at\s+(?:async\s+)?(?:new\s+)?(?:[^\s()]+\s*\()?(?:\/|[A-Za-z]:\\|file:|webpack(?:-internal)?:|node:|<anonymous>|native\b|(?:[\w.@~+-]+\/)*[\w$.-]+\.\w+:\d+)|\bTraceback \(most recent call last\)|(?:^|\s+)goroutine \d+ \[/;
// A file path: Unix (two or more segments of any letters, not the path part of a URL), Windows (either
// slash) or a share's (\\server\share), with any :line:col. Unquoted, a folder's name may hold spaces
// (`/home/ada/My Projects/secret`): the path goes on over a space only from a segment that is not a file's
// name (no dot but a leading one), over up to four words to a separator and a segment after it; prose after
// a path (`/a/b.ts is not 1/2 done`, `/a/b.ts or use w/ care`) is kept. A spaced last name ends the path
// only in capitalised words that end the text or a clause (`/home/ada/My Projects`, `... Projects, then`).
// Limits, on the side of hiding more: after a folder's name (no dot), lower-case prose that leads to a word
// with a slash (`/srv/app then src/b.ts`) is taken as the folder's name; capitalised words ending a text
// after one (`/srv/app Is Down`) too. Every part repeats over bounded words: linear in the text.
const SEGMENT = String.raw`[\p{L}\p{N}_.@~+-]+`;
const FOLDER_WORD = String.raw`\.?[\p{L}\p{N}_@~+-]+`;
const WINDOWS_WORD = String.raw`[^\s'"()\\/]+`;
const WINDOWS_TAIL = String.raw`[^\s'"()]*`;
/** Where a path may go on over a space: just after a segment that is not a file's name. */
const AFTER_UNIX_FOLDER = String.raw`(?<=\/${FOLDER_WORD})`;
const AFTER_WINDOWS_FOLDER = String.raw`(?<=[\\/]\.?[^\s'"()\\/.]+)`;
/**
 * More of a path after a space: after a folder's word, words (one to four), a separator and at least one
 * character of the path's own pattern, any number of times; then, ending the text or a clause,
 * capitalised words (the rest of the last folder's name).
 */
const SPACED = (afterFolder: string, word: string, separator: string, tail: string) =>
  String.raw`(?:${afterFolder}(?: ${word}){1,4}${separator}${tail})*(?:${afterFolder}(?: \p{Lu}${FOLDER_WORD}?){1,4}(?=[.,;:!?]*$|[.,;:!?]+\s))?`;
const UNIX_PATH = String.raw`(?<![\p{L}\p{N}_:/.])(?:(?:\/${SEGMENT}){2,}\/?|\/${FOLDER_WORD}(?=(?: ${SEGMENT}){1,4}\/${SEGMENT}))${SPACED(AFTER_UNIX_FOLDER, SEGMENT, '\\/', String.raw`${SEGMENT}(?:\/${SEGMENT})*\/?`)}(?::\d+)*`;
const WINDOWS_PATH = String.raw`\b[A-Za-z]:[\\/]${WINDOWS_TAIL}${SPACED(AFTER_WINDOWS_FOLDER, WINDOWS_WORD, '[\\\\/]', `[^\\s'"()]+`)}`;
const SHARE_PATH = String.raw`\\\\[^\s'"()\\]+\\${WINDOWS_TAIL}${SPACED(AFTER_WINDOWS_FOLDER, WINDOWS_WORD, '\\\\', `[^\\s'"()]+`)}`;
// Built at its first use (an error's text, a provider's cause): parsing its Unicode classes took about
// 2 ms of the service thread's load (issue 25, "editor activation"), before anything is redacted.
let filePath: RegExp | undefined;
const FILE_PATH = () => (filePath ??= new RegExp(`${UNIX_PATH}|${WINDOWS_PATH}|${SHARE_PATH}`, 'gu'));
// A quoted absolute path (git quotes the paths it names: `'/home/me/my project/.git/worktrees/x'`), whole, spaces and all.
const QUOTED_PATH = /(['"])(?:\/|[A-Za-z]:[\\/]|\\\\)[^'"\n]*\1/g;

/**
 * `text` with every absolute path replaced by `[path]`: a quoted one whole, else a Unix one of two or
 * more segments or a Windows one. For a third party's eyes (a provider's text shown to a client, an
 * error a webhook's sender reads): the machine's folders are not theirs to know.
 */
export function withoutPaths(text: string): string {
  return text.replace(QUOTED_PATH, '$1[path]$1').replace(FILE_PATH(), '[path]');
}

/**
 * What a provider's own error text may show a client: its first sentence, cut before any stack
 * frame, paths replaced, secrets removed, one short line. The whole text goes to the log only.
 */
export function cleanCause(text: unknown, secrets: VendorSecrets = {}): string {
  let cause = safeDetail(text, secrets, MAX_LOGGED_TEXT_LENGTH);
  const frame = STACK_FRAME.exec(cause);
  if (frame) cause = cause.slice(0, frame.index);
  const sentenceEnd = /[.!?](?=\s|$)/.exec(cause);
  if (sentenceEnd) cause = cause.slice(0, sentenceEnd.index + 1);
  cause = withoutPaths(cause).trim();
  return shortened(cause, MAX_CAUSE_LENGTH);
}

/** An endpoint as it may be shown: no user info, query or fragment (they can carry credentials). */
export function describeEndpoint(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/(?<!\/)\/+$/, '')}`;
  } catch {
    return '(invalid URL)';
  }
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}
