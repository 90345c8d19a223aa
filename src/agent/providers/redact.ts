/**
 * Making a provider's own text safe to put in an error message. Vendors quote credentials back (OpenAI's
 * 401 says `Incorrect API key provided: sk-abc***wxyz`), so nothing a provider says reaches a message
 * without passing through here.
 */

const REDACTED = '[redacted]';
export const MAX_DETAIL_LENGTH = 200;

const patterns: RegExp[] = [
  // Authorization headers quoted back.
  /\b(?:Bearer|Basic)\s+[^\s"',;]+/gi,
  // Masked keys: `sk-abc***wxyz`, `abcd...wxyz` style masks with a run of asterisks or an ellipsis.
  /[\w.\-]*\*{3,}[\w.\-]*/g,
  /[\w\-]+(?:\u2026|\.{3})[\w\-]+/g,
  // Vendor key prefixes: OpenAI/Anthropic/OpenRouter `sk-`, Groq `gsk_`, xAI `xai-`, `rk_`/`pk_` keys.
  /\b(?:sk|rk|pk|gsk|xai)[-_][\w\-.*]*/gi,
  // Long opaque tokens mixing letters and digits (keys of vendors with no recognisable prefix).
  /\b(?=[\w\-]*\d)(?=[\w\-]*[A-Za-z])[\w\-]{32,}/g,
];

/** Replaces every secret, any 4+ character piece of one, and anything key-like in `text`. */
export function redactSecrets(text: string, secrets: readonly (string | null | undefined)[] = []): string {
  const known = secrets.filter((s): s is string => typeof s === 'string' && s.length >= 4);
  let out = text;
  for (const secret of known) out = out.split(secret).join(REDACTED);
  for (const pattern of patterns) out = out.replace(pattern, REDACTED);
  // Fragments of a known secret (a vendor may quote its first or last few characters).
  if (known.length > 0) {
    out = out.replace(/[\w\-]{4,}/g, (token) => (known.some((s) => s.includes(token)) ? REDACTED : token));
  }
  return out;
}

/** One line, secrets removed, at most `max` characters. */
export function safeDetail(
  text: unknown,
  secrets: readonly (string | null | undefined)[] = [],
  max = MAX_DETAIL_LENGTH,
): string {
  const raw = typeof text === 'string' ? text : text === undefined || text === null ? '' : safeStringify(text);
  const oneLine = redactSecrets(raw, secrets).replace(/\s+/g, ' ').trim();
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
// A file path: Unix (two or more segments, not the path part of a URL) or Windows, with any :line:col.
const FILE_PATH = /(?<![\w:/.])(?:\/[\w.@~+-]+){2,}\/?(?::\d+)*|\b[A-Za-z]:\\[^\s'"()]*/g;

/**
 * What a provider's own error text may show a client: its first sentence, cut before any stack
 * frame, paths replaced, secrets removed, one short line. The whole text goes to the log only.
 */
export function cleanCause(text: unknown, secrets: readonly (string | null | undefined)[] = []): string {
  let cause = safeDetail(text, secrets, MAX_LOGGED_TEXT_LENGTH);
  const frame = STACK_FRAME.exec(cause);
  if (frame) cause = cause.slice(0, frame.index);
  const sentenceEnd = /[.!?](?=\s|$)/.exec(cause);
  if (sentenceEnd) cause = cause.slice(0, sentenceEnd.index + 1);
  cause = cause.replace(FILE_PATH, '[path]').trim();
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

/**
 * An endpoint as a client may see it in get_config: credentials some gateways take in the URL (user
 * info, query values such as `?api-key=`) replaced by `[redacted]`, the rest kept so it stays readable.
 */
export function endpointWithoutCredentials(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '(invalid URL)';
  }
  if (!parsed.username && !parsed.password && !parsed.search && !parsed.hash) return url;
  const userinfo = parsed.username || parsed.password ? `${REDACTED}@` : '';
  const query = [...parsed.searchParams.keys()].map((name) => `${encodeURIComponent(name)}=${REDACTED}`).join('&');
  return `${parsed.protocol}//${userinfo}${parsed.host}${parsed.pathname}${query ? `?${query}` : ''}${parsed.hash ? '#' + REDACTED : ''}`;
}

function safeStringify(value: unknown): string {
  try {
    return JSON.stringify(value) ?? '';
  } catch {
    return '';
  }
}
