/**
 * Making a provider's own text fit an error message: one short line, its first sentence, no stack
 * frames or paths. Secrets are removed by the one redaction module (src/log/redact.ts); nothing a
 * provider says reaches a message without passing through here.
 */
import { redactVendorText, type VendorSecrets } from '../../log/redact';

export const MAX_DETAIL_LENGTH = 200;

/** One line, secrets removed, at most `max` characters. */
export function safeDetail(text: unknown, secrets: VendorSecrets = {}, max = MAX_DETAIL_LENGTH): string {
  const raw = typeof text === 'string' ? text : text === undefined || text === null ? '' : safeStringify(text);
  const oneLine = redactVendorText(raw, secrets).replace(/\s+/g, ' ').trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}\u2026` : oneLine;
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
// (`/home/ada/My Projects/secret`): the path goes on over up to four words after a space when they lead to
// another separator; prose after a path (`/a/b.ts is not in the workspace`) has none and is kept.
const SEGMENT = String.raw`[\p{L}\p{N}_.@~+-]+`;
const WINDOWS_WORD = String.raw`[^\s'"()\\/]+`;
const WINDOWS_TAIL = String.raw`[^\s'"()]*`;
/** More of a path after a space: words (one to four), a separator, the rest as the path's own pattern goes on. */
const SPACED = (word: string, separator: string, tail: string) => String.raw`(?:(?: ${word}){1,4}${separator}${tail})*`;
const UNIX_PATH = String.raw`(?<![\p{L}\p{N}_:/.])(?:(?:\/${SEGMENT}){2,}\/?|\/${SEGMENT}(?=(?: ${SEGMENT}){1,4}\/))${SPACED(SEGMENT, '\\/', String.raw`(?:${SEGMENT})?(?:\/${SEGMENT})*\/?`)}(?::\d+)*`;
const WINDOWS_PATH = String.raw`\b[A-Za-z]:[\\/]${WINDOWS_TAIL}${SPACED(WINDOWS_WORD, '[\\\\/]', WINDOWS_TAIL)}`;
const SHARE_PATH = String.raw`\\\\[^\s'"()\\]+\\${WINDOWS_TAIL}${SPACED(WINDOWS_WORD, '\\\\', WINDOWS_TAIL)}`;
const FILE_PATH = new RegExp(`${UNIX_PATH}|${WINDOWS_PATH}|${SHARE_PATH}`, 'gu');
// A quoted absolute path (git quotes the paths it names: `'/home/me/my project/.git/worktrees/x'`), whole, spaces and all.
const QUOTED_PATH = /(['"])(?:\/|[A-Za-z]:[\\/]|\\\\)[^'"\n]*\1/g;

/**
 * `text` with every absolute path replaced by `[path]`: a quoted one whole, else a Unix one of two or
 * more segments or a Windows one. For a third party's eyes (a provider's text shown to a client, an
 * error a webhook's sender reads): the machine's folders are not theirs to know.
 */
export function withoutPaths(text: string): string {
  return text.replace(QUOTED_PATH, '$1[path]$1').replace(FILE_PATH, '[path]');
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
  return cause.length > MAX_CAUSE_LENGTH ? `${cause.slice(0, MAX_CAUSE_LENGTH - 1)}\u2026` : cause;
}

/** An endpoint as it may be shown: no user info, query or fragment (they can carry credentials). */
export function describeEndpoint(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
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
