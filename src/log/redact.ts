/**
 * The one redaction module: the log, a provider's error text and the editor's webview all scrub secrets
 * here, of one list (the config's secrets, `secretValues` in src/config/secrets.ts, plus the session
 * tokens alive; `Redactor.secrets()` holds both). Each use adds what fits its text: the log hides
 * credential-shaped parts and secret-named fields, a vendor's text also key-like tokens, and the
 * webview (which shows chat text as written) only the known secrets.
 */

/** What a secret is replaced with. */
export const REDACTED = '[redacted]';

/** Field names whose value is a secret whatever it holds. */
export const SECRET_KEY = /api[_-]?key|private[_-]?key|token|secret|password|authorization|cookie/i;

/**
 * SECRET_KEY names that hold counts, not credentials (`max_tokens`, `input_tokens`, `token_count`):
 * a number under them is kept.
 */
const COUNT_KEY = /tokens|token_?count|max_?token/i;

/** Shorter values are not treated as secrets: redacting "true" or "1234" everywhere would ruin logs. */
export const MIN_SECRET_LENGTH = 8;
/** Texts up to this length have their redaction kept (Redactor's `answers`): ids and names, not messages. */
const KEPT_TEXT_CHARS = 64;
/** How many are kept; past it the memory starts again (a service's lines repeat few short texts). */
const KEPT_TEXTS = 256;

const MAX_DEPTH = 12;

// Credentials recognisable by shape, whether or not they are known secrets. Each pattern is tried at
// every position of texts an attacker can make long (a log field, a provider's error): none may scan
// to the end of a run of letters from each position of that run (quadratic: 40 KB of letters took
// 4.7 s). So a match starts only where it could begin (the start of a run: lookbehinds), and a part
// that is a name (a query parameter's, a JSON key's) is at most 128 characters on either side of
// its keyword (test/service/redaction-linear.test.ts).
const SHAPED_SECRETS: [RegExp, string][] = [
  // Authorization header values quoted in messages.
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{6,}/g, `$1 ${REDACTED}`],
  // user:password@ in URLs.
  // The scheme starts at the run's first letter (what precedes it in the run: digits, +, ., -).
  [/(?=[a-z])(?<=(?:^|[^a-z0-9+.-])[0-9+.-]*)([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]+@/gi, `$1${REDACTED}@`],
  // ?token=... / &api_key=... in URLs.
  [/([?&][^=&\s#]{0,128}?(?:api[_-]?key|token|secret|password|signature|(?<![a-z])sig(?![a-z]))[^=&\s#]{0,128}=)[^&\s#]+/gi, `$1${REDACTED}`],
  // "api_key": "..." inside JSON text (a request body logged as a string).
  [/("[^"\\]{0,128}?(?:api[_-]?key|token|secret|password|authorization|cookie)[^"\\]{0,128}"\s*:\s*)"(?:[^"\\]|\\.)*"/gi, `$1"${REDACTED}"`],
];

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The forms a secret may take in text: as is, URL-encoded, and escaped inside a JSON string. */
function variantsOf(secret: string): string[] {
  const variants = new Set([secret]);
  try {
    variants.add(encodeURIComponent(secret));
  } catch {
    // A lone surrogate cannot be URL-encoded; the plain form is still matched.
  }
  variants.add(JSON.stringify(secret).slice(1, -1));
  return [...variants];
}

function buildMatcher(secrets: Iterable<string>): RegExp | null {
  const variants = new Set<string>();
  for (const secret of secrets) {
    if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH) continue;
    for (const variant of variantsOf(secret)) variants.add(variant);
  }
  if (variants.size === 0) return null;
  // Longest first, so a secret that contains another is replaced whole.
  const alternatives = [...variants].sort((a, b) => b.length - a.length).map(escapeRegExp);
  return new RegExp(alternatives.join('|'), 'g');
}

function applyRedaction(text: string, matcher: RegExp | null): string {
  let result = matcher ? text.replace(matcher, REDACTED) : text;
  for (const [pattern, replacement] of SHAPED_SECRETS) result = result.replace(pattern, replacement);
  return result;
}

/**
 * Every known secret (each form of it) in every string of a JSON-safe `value`, keys included, replaced.
 * What holds none is given back as it is (the same object): only the parts that change are copied.
 */
export function redactKnownSecrets<T>(value: T, secrets: Iterable<string>): T {
  return redactWith(value, buildMatcher(secrets));
}

/**
 * redactKnownSecrets for one receiver of many values (the chat webview: every message posted to it): the
 * matcher is built again only when the secrets change, not for every value.
 */
export class KnownSecretsRedactor {
  private secrets: readonly string[] = [];
  private matcher: RegExp | null = null;

  redact<T>(value: T, secrets: readonly string[]): T {
    if (secrets.length !== this.secrets.length || secrets.some((secret, i) => secret !== this.secrets[i])) {
      this.secrets = [...secrets];
      this.matcher = buildMatcher(secrets);
    }
    return redactWith(value, this.matcher);
  }
}

function redactWith<T>(value: T, matcher: RegExp | null): T {
  return matcher ? (scrubbed(value, matcher) as T) : value;
}

/** `item` with the matcher's matches replaced, copied only where something was (indexed loops: no garbage per key). */
function scrubbed(item: unknown, matcher: RegExp): unknown {
  if (typeof item === 'string') return item.replace(matcher, REDACTED);
  if (item === null || typeof item !== 'object') return item;
  if (Array.isArray(item)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < item.length; i += 1) {
      const entry: unknown = item[i];
      const clean = scrubbed(entry, matcher);
      if (clean !== entry) (copy ??= [...item])[i] = clean;
    }
    return copy ?? item;
  }
  const record = item as Record<string, unknown>;
  const keys = Object.keys(record);
  let copy: Record<string, unknown> | undefined;
  for (let i = 0; i < keys.length; i += 1) {
    const key = keys[i]!;
    const entry = record[key];
    const name = key.replace(matcher, REDACTED);
    const clean = scrubbed(entry, matcher);
    if (name === key && clean === entry) continue;
    copy ??= { ...record };
    if (name !== key) delete copy[key];
    // A data property whatever its name (an own `__proto__` key must stay a key, not become the prototype).
    Object.defineProperty(copy, name, { value: clean, enumerable: true, writable: true, configurable: true });
  }
  return copy ?? item;
}

// Credentials of vendors, recognised in a vendor's own text (too eager for a log, where ids look alike).
const VENDOR_KEY_SHAPES: RegExp[] = [
  // Authorization headers quoted back.
  /\b(?:Bearer|Basic)\s+[^\s"',;]+/gi,
  // Masked keys: `sk-abc***wxyz`, `abcd...wxyz` style masks with a run of asterisks or an ellipsis. Each
  // starts at its run's start, or at the asterisks right after an earlier match (linear, as above).
  /(?<![\w.\-])[\w.\-]*\*{3,}[\w.\-]*|\*{3,}[\w.\-]*/g,
  /(?<![\w\-])[\w\-]+(?:\u2026|\.{3})[\w\-]+/g,
  // Vendor key prefixes: OpenAI/Anthropic/OpenRouter `sk-`, Groq `gsk_`, xAI `xai-`, `rk_`/`pk_` keys.
  /\b(?:sk|rk|pk|gsk|xai)[-_][\w\-.*]*/gi,
  // Long opaque tokens mixing letters and digits (keys of vendors with no recognisable prefix).
  /\b(?<=(?:^|[^\w\-])-*)(?=[\w\-]*\d)(?=[\w\-]*[A-Za-z])[\w\-]{32,}/g,
];

/** Shortest piece of its own credential a vendor's text is scrubbed of (vendors quote a key's first or last few characters). */
const MIN_QUOTED_PIECE = 4;

/** The secrets a vendor's text is scrubbed of. */
export interface VendorSecrets {
  /** The vendor's own credentials (its key, a URL's password): removed whole and in any 4+ character piece. */
  own?: readonly (string | null | undefined)[];
  /** Every other secret of the service: removed whole. */
  known?: Iterable<string>;
}

/**
 * A vendor's (a provider's) text made safe to show: every known secret and credential shape as in
 * `redactText`, and its own credential in any piece, masked keys, vendor key prefixes and long opaque
 * tokens. Vendors quote credentials back (OpenAI's 401 says `Incorrect API key provided: sk-abc***wxyz`).
 */
export function redactVendorText(text: string, secrets: VendorSecrets = {}): string {
  const own = (secrets.own ?? []).filter((s): s is string => typeof s === 'string' && s.length >= MIN_QUOTED_PIECE);
  let out = text;
  for (const secret of own) out = out.split(secret).join(REDACTED);
  out = redactText(out, secrets.known ?? []);
  for (const pattern of VENDOR_KEY_SHAPES) out = out.replace(pattern, REDACTED);
  if (own.length > 0) {
    const piece = new RegExp(`[\\w\\-]{${MIN_QUOTED_PIECE},}`, 'g');
    out = out.replace(piece, (token) => (own.some((s) => s.includes(token)) ? REDACTED : token));
  }
  return out;
}

/**
 * `text` with every occurrence of the given secrets (values under 8 characters ignored) and every
 * credential-shaped part (Bearer values, URL passwords, token query parameters) replaced by
 * "[redacted]". For messages shown to clients, e.g. a provider's error text.
 */
export function redactText(text: string, secrets: Iterable<string>): string {
  return applyRedaction(text, buildMatcher(secrets));
}

/**
 * The secrets currently in force (from the config, plus tokens created at run time) and the means to
 * scrub them from anything about to be logged.
 */
export class Redactor {
  private configured = new Set<string>();
  private added = new Set<string>();
  private matcher: RegExp | null = null;
  /**
   * redactText's answers for short texts met again (every line's event name, a turn's conversation id, a
   * component's name), kept while the secrets stay the same: `rebuild` forgets them all. Its regular
   * expressions (the secrets' matcher and SHAPED_SECRETS) scan a text in ~1-3 us; a look-up here is ~0.05.
   */
  private readonly answers = new Map<string, string>();
  /** Called after every change of the secrets held (the editor's copy for its webview follows it: service-thread). */
  onChange?: () => void;

  constructor(secrets: Iterable<string> = []) {
    this.setSecrets(secrets);
  }

  /** Replaces the config's secrets (call on every config change); added secrets are kept. */
  setSecrets(values: Iterable<string>): void {
    this.configured = new Set([...values].filter((value) => typeof value === 'string' && value.length >= MIN_SECRET_LENGTH));
    this.rebuild();
  }

  /** A secret created at run time, e.g. a session token. */
  addSecret(value: string): void {
    if (typeof value !== 'string' || value.length < MIN_SECRET_LENGTH || this.added.has(value)) return;
    this.added.add(value);
    this.rebuild();
  }

  /** Forgets a run-time secret (an expired session token), so the set does not grow forever. */
  removeSecret(value: string): void {
    if (this.added.delete(value)) this.rebuild();
  }

  /** Every secret held, configured and added. */
  secrets(): string[] {
    return [...new Set([...this.configured, ...this.added])];
  }

  redactText(text: string): string {
    if (text.length > KEPT_TEXT_CHARS) return applyRedaction(text, this.matcher);
    const kept = this.answers.get(text);
    if (kept !== undefined) return kept;
    const redacted = applyRedaction(text, this.matcher);
    if (this.answers.size >= KEPT_TEXTS) this.answers.clear();
    this.answers.set(text, redacted);
    return redacted;
  }

  /**
   * A JSON-safe deep copy of `value` with secrets removed: known secret values inside any string, and
   * the whole value of any field whose name looks secret. Errors become {name, message, stack, ...};
   * cycles become "[circular]".
   */
  redact(value: unknown): unknown {
    return this.walk(value, new Set(), 0);
  }

  /** Like redact(), for a log line's fields. */
  redactFields(fields: Record<string, unknown>): Record<string, unknown> {
    return this.walkEntries(Object.entries(fields), new Set(), 0);
  }

  private rebuild(): void {
    this.matcher = buildMatcher([...this.configured, ...this.added]);
    this.answers.clear();
    this.onChange?.();
  }

  private walk(value: unknown, ancestors: Set<object>, depth: number): unknown {
    switch (typeof value) {
      case 'string':
        return this.redactText(value);
      case 'number':
        return Number.isFinite(value) ? value : String(value);
      case 'boolean':
      case 'undefined':
        return value;
      case 'bigint':
        return value.toString();
      case 'symbol':
        return this.redactText(value.toString());
      case 'function':
        return `[function ${value.name || 'anonymous'}]`;
    }
    if (value === null) return null;
    const object = value as object;
    if (ancestors.has(object)) return '[circular]';
    if (depth >= MAX_DEPTH) return '[too deep]';
    if (object instanceof Date) return Number.isNaN(object.getTime()) ? 'Invalid Date' : object.toISOString();
    if (ArrayBuffer.isView(object) || object instanceof ArrayBuffer) return `[${object.byteLength} bytes]`;

    ancestors.add(object);
    try {
      if (object instanceof Error) return this.walkError(object, ancestors, depth);
      if (Array.isArray(object)) return object.map((item) => this.walk(item, ancestors, depth + 1));
      if (object instanceof Map)
        return this.walkEntries(
          [...object.entries()].map(([k, v]) => [String(k), v]),
          ancestors,
          depth,
        );
      if (object instanceof Set) return [...object].map((item) => this.walk(item, ancestors, depth + 1));
      const toJSON = (object as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === 'function') return this.walk(toJSON.call(object), ancestors, depth + 1);
      return this.walkEntries(Object.entries(object), ancestors, depth);
    } catch {
      return '[unreadable]';
    } finally {
      ancestors.delete(object);
    }
  }

  private walkEntries(entries: [string, unknown][], ancestors: Set<object>, depth: number): Record<string, unknown> {
    const result: Record<string, unknown> = {};
    for (const [key, item] of entries) {
      result[key] = this.secretKeyHides(key, item) ? REDACTED : this.walk(item, ancestors, depth + 1);
    }
    return result;
  }

  private secretKeyHides(key: string, value: unknown): boolean {
    if (!SECRET_KEY.test(key)) return false;
    if (value === null || value === undefined || typeof value === 'boolean') return false;
    if (typeof value === 'number') return !COUNT_KEY.test(key);
    return true;
  }

  private walkError(error: Error, ancestors: Set<object>, depth: number): Record<string, unknown> {
    const entries: [string, unknown][] = [
      ['name', error.name],
      ['message', error.message],
      ['stack', error.stack],
    ];
    const extra = error as Error & { code?: unknown; cause?: unknown };
    if (extra.code !== undefined) entries.push(['code', extra.code]);
    if (extra.cause !== undefined) entries.push(['cause', extra.cause]);
    for (const [key, item] of Object.entries(error)) {
      if (key !== 'code' && key !== 'cause' && key !== 'name' && key !== 'message' && key !== 'stack') entries.push([key, item]);
    }
    return this.walkEntries(entries, ancestors, depth);
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
