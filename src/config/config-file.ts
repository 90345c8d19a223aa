import { EventEmitter } from 'node:events';
import { watch as watchFs, type FSWatcher } from 'node:fs';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { ServiceConfigFile, WritableConfig, type ServiceConfig } from '../protocol/config';
import type { AuditActor } from '../protocol/audit';
import { ServiceError } from '../protocol/errors';
import { nullLogger, type Logger } from '../log/logger';
import { writeFileAtomic } from '../platform/atomic-write';
import { ConfigError, describeIssues, jsonSyntaxError } from './config-error';
import { withConfigLock } from './config-lock';
import { CONFIG_FILE_NAME } from '../platform/paths';
import { generateAuthToken } from './secrets';

export { ConfigError } from './config-error';
export { generateAuthToken, secretValues } from './secrets';

/** What a change replaced, and who made it (absent: service.json was edited on disk). */
export interface ConfigChange {
  previous: ServiceConfig;
  by?: AuditActor;
}

export interface ConfigFileEvents {
  /** The config in force changed (update, edit, or a hand edit picked up by watch). */
  change: [fields: string[], config: ServiceConfig, change: ConfigChange];
  /** A hand edit made the file invalid; the last good config stays in force. */
  invalid: [error: ConfigError];
  /** The file is valid again after an 'invalid' (a 'change' follows if a value differs). */
  recovered: [];
}

export interface ConfigFileOptions {
  logger?: Logger;
  /** Quiet time after the last file event before the file is re-read (default 100 ms). */
  debounceMs?: number;
}

type RawConfig = Record<string, unknown>;
interface Parsed {
  raw: RawConfig;
  config: ServiceConfig;
}

const KNOWN_FIELDS = new Set(Object.keys(ServiceConfigFile.shape));
/** Fields written into a new service.json, so the user sees what to change. */
const INITIAL_FIELDS = ['provider', 'model', 'temperature', 'permission_mode'] as const;

/**
 * service.json: the one place the service's settings live. Every write goes through the raw JSON the
 * user wrote (so unknown fields and the form of `channels` survive), is atomic, and happens one at a
 * time; hand edits are picked up while running; an invalid file is never overwritten.
 */
export class ConfigFile extends EventEmitter<ConfigFileEvents> {
  readonly path: string;
  private raw: RawConfig;
  private config: ServiceConfig;
  /** The text on disk that `raw` was read from or written as; lets the watcher skip our own writes. */
  private diskText: string;
  private indent: string;
  private invalidText: string | null = null;
  private missingReported = false;
  private queue: Promise<unknown> = Promise.resolve();
  private watcher: FSWatcher | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private readonly logger: Logger;
  private readonly debounceMs: number;

  private constructor(
    readonly dataDir: string,
    parsed: Parsed,
    diskText: string,
    options: ConfigFileOptions,
  ) {
    super();
    this.path = join(dataDir, CONFIG_FILE_NAME);
    this.raw = parsed.raw;
    this.config = deepFreeze(parsed.config);
    this.diskText = diskText;
    this.indent = detectIndent(diskText);
    this.logger = options.logger ?? nullLogger;
    this.debounceMs = options.debounceMs ?? 100;
  }

  /**
   * Reads `<dataDir>/service.json`, creating the directory and a default file if needed, and generating
   * `auth_token` if the file has none. Throws ConfigError (naming every bad field) for an invalid file,
   * which is left untouched.
   */
  static async load(dataDir: string, options: ConfigFileOptions = {}): Promise<ConfigFile> {
    const logger = options.logger ?? nullLogger;
    // A whole file (it has its token) is only read: every writer replaces it whole (writeFileAtomic), so
    // a read without the lock sees one writer's file or the next's, never a mix, and what changes after
    // is the watcher's. Eight file calls fewer on every start but the first (the editor's activation).
    const path = join(dataDir, CONFIG_FILE_NAME);
    const text = await readTextOrNull(path);
    const parsed = text === null ? undefined : parseConfigText(path, text);
    if (text !== null && parsed?.config.auth_token !== undefined) return ConfigFile.loaded(dataDir, parsed, text, options, logger);
    // Creating the file (and its directory) or adding a token writes it: under the lock, like every other write.
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    return withConfigLock(dataDir, logger, () => ConfigFile.loadLocked(dataDir, options, logger));
  }

  /** A valid file, read: its unknown fields and its mode are told in the log. */
  private static async loaded(dataDir: string, parsed: Parsed, text: string, options: ConfigFileOptions, logger: Logger): Promise<ConfigFile> {
    const path = join(dataDir, CONFIG_FILE_NAME);
    warnUnknownFields(parsed.raw, logger);
    await warnIfOpenToOthers(path, logger);
    return new ConfigFile(dataDir, parsed, text, options);
  }

  private static async loadLocked(dataDir: string, options: ConfigFileOptions, logger: Logger): Promise<ConfigFile> {
    const path = join(dataDir, CONFIG_FILE_NAME);
    const text = await readTextOrNull(path);

    if (text === null) {
      const defaults = ServiceConfigFile.parse({});
      const raw: RawConfig = {};
      for (const field of INITIAL_FIELDS) raw[field] = defaults[field];
      raw.auth_token = generateAuthToken();
      const created = serialize(raw, '  ');
      await writeFileAtomic(path, created);
      logger.info('config.created', { file: path });
      return new ConfigFile(dataDir, { raw, config: validate(path, raw) }, created, options);
    }

    const completed = await completeAuthToken(path, text, parseConfigText(path, text), logger);
    return ConfigFile.loaded(dataDir, completed.parsed, completed.text, options, logger);
  }

  /** The config in force, defaults applied. Frozen: change it with update() or edit(). */
  get current(): ServiceConfig {
    return this.config;
  }

  /** The service's access token (always present once loaded). */
  get authToken(): string {
    return this.config.auth_token!;
  }

  /**
   * Applies an `update_config` patch: all or nothing. Unknown or invalid fields throw invalid_request
   * naming them; `null` removes an optional setting. Returns the fields whose value changed (nothing
   * changed: nothing is written).
   */
  async update(patch: unknown, by?: AuditActor): Promise<string[]> {
    const result = WritableConfig.safeParse(patch);
    if (!result.success) {
      throw new ServiceError('invalid_request', `invalid config: ${describeIssues(result.error).join('; ')}`);
    }
    const changes = Object.entries(result.data).filter(([, value]) => value !== undefined);
    return this.enqueue(async () => {
      await this.syncBeforeWrite((error) => new ServiceError('server_error', `cannot update the config: ${CONFIG_FILE_NAME} has errors (${error.problems.join('; ')})`));
      const next: RawConfig = { ...this.raw };
      for (const [field, value] of changes) {
        if (value === null) delete next[field];
        else next[field] = value;
      }
      return this.commit(
        next,
        changes.map(([field]) => field),
        (problems) => new ServiceError('invalid_request', `invalid config: ${problems.join('; ')}`),
        by,
      );
    });
  }

  /**
   * For the service's own writers (adding a user, setting the port): `mutate` changes a copy of the raw
   * JSON, which must still be valid (else ConfigError, nothing written). Returns the changed top-level
   * fields. `by`: who asked for it (the audit log's actor).
   */
  async edit(mutate: (raw: Record<string, unknown>) => void | Promise<void>, by?: AuditActor): Promise<string[]> {
    return this.enqueue(async () => {
      await this.syncBeforeWrite((error) => error);
      const next = structuredClone(this.raw);
      await mutate(next);
      return this.commit(next, undefined, (problems) => new ConfigError(this.path, problems), by);
    });
  }

  /** Starts picking up hand edits of service.json. */
  watch(): void {
    if (this.watcher) return;
    try {
      // The directory, not the file: editors save by writing a new file and renaming it over.
      this.watcher = watchFs(this.dataDir, { persistent: false }, (_event, filename) => {
        if (filename && filename !== CONFIG_FILE_NAME) return;
        this.scheduleReload();
      });
    } catch (error) {
      this.logger.warn('config.watch_failed', { file: this.path, error });
      return;
    }
    this.watcher.on('error', (error) => {
      this.logger.warn('config.watch_failed', { file: this.path, error });
      this.stopWatching();
    });
    // A change made since the load raised its event before anyone listened: one check now (no lock
    // unless the text differs).
    this.scheduleReload();
  }

  /** Stops watching and waits for any write or reload under way. */
  async close(): Promise<void> {
    this.stopWatching();
    await this.queue;
  }

  private stopWatching(): void {
    clearTimeout(this.debounce);
    this.debounce = undefined;
    this.watcher?.close();
    this.watcher = undefined;
  }

  private scheduleReload(): void {
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      if (!this.watcher) return;
      void this.changedOnDisk().then((changed) => {
        // Closed while it read: a reload now would take the lock after the data directory was let go.
        if (changed && this.watcher) this.enqueue(() => this.reloadFromDisk()).catch((error) => this.logger.error('config.reload_failed', { file: this.path, error }));
      });
    }, this.debounceMs);
    this.debounce.unref();
  }

  /**
   * Runs config writes and reloads one at a time, in call order, each holding service.json.lock so
   * other processes' writes do not interleave (each task re-reads the file under it).
   */
  private enqueue<T>(task: () => Promise<T>): Promise<T> {
    const locked = () => withConfigLock(this.dataDir, this.logger, task);
    const run = this.queue.then(locked, locked);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Whether service.json may differ from what was last read or written, read without the lock (writes
   * rename a whole file over it: this sees the old text or the new one). An event that changed nothing
   * (the store's open making a 0644 service.json private: a chmod) then takes no lock; a write that
   * lands after this read raises its own event.
   */
  private async changedOnDisk(): Promise<boolean> {
    try {
      // A file reported missing is reloaded when it comes back, even as it was (its next deletion is reported).
      return (await readTextOrNull(this.path)) !== this.diskText || this.invalidText !== null || this.missingReported;
    } catch {
      return true; // reloadFromDisk reports it
    }
  }

  private async reloadFromDisk(): Promise<void> {
    let text: string | null;
    try {
      text = await readTextOrNull(this.path);
    } catch (error) {
      this.logger.warn('config.read_failed', { file: this.path, error });
      return;
    }
    if (text === null) {
      if (!this.missingReported) this.logger.warn('config.file_missing', { file: this.path, keeping: 'last good config' });
      this.missingReported = true;
      return;
    }
    this.missingReported = false;
    if (text === this.diskText) {
      this.clearInvalid();
      return;
    }
    const outcome = this.parseOrReport(text);
    if (outcome instanceof ConfigError) return;
    await this.adopt(text, outcome);
  }

  /**
   * A write must start from what is on disk: a hand edit not yet picked up by the watcher is adopted
   * first, and a file made invalid by hand is not overwritten (the write is refused).
   */
  private async syncBeforeWrite(refuse: (error: ConfigError) => Error): Promise<void> {
    const text = await readTextOrNull(this.path);
    if (text === null || text === this.diskText) return;
    const outcome = this.parseOrReport(text);
    if (outcome instanceof ConfigError) throw refuse(outcome);
    await this.adopt(text, outcome);
  }

  /** The file's text parsed; or, when it is not a valid config, its error, already reported (the last good config stays). */
  private parseOrReport(text: string): Parsed | ConfigError {
    try {
      return parseConfigText(this.path, text);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      this.reportInvalid(text, error);
      return error;
    }
  }

  private async adopt(text: string, parsed: Parsed): Promise<void> {
    warnUnknownFields(parsed.raw, this.logger);
    const completed = await completeAuthToken(this.path, text, parsed, this.logger);
    const fields = changedFields(this.config, completed.parsed.config);
    const previous = this.config;
    this.raw = completed.parsed.raw;
    this.config = deepFreeze(completed.parsed.config);
    this.diskText = completed.text;
    this.indent = detectIndent(completed.text);
    this.clearInvalid();
    this.logger.info('config.reloaded', { file: this.path, fields });
    if (fields.length > 0) this.emitSafely('change', fields, this.config, { previous });
  }

  private async commit(next: RawConfig, candidates: string[] | undefined, invalid: (problems: string[]) => Error, by?: AuditActor): Promise<string[]> {
    const result = ServiceConfigFile.safeParse(structuredClone(next));
    if (!result.success) throw invalid(describeIssues(result.error, next));
    const fields = changedFields(this.config, result.data, candidates);
    if (fields.length === 0) return [];
    const text = serialize(next, this.indent);
    await writeFileAtomic(this.path, text);
    const previous = this.config;
    this.raw = next;
    this.config = deepFreeze(result.data);
    this.diskText = text;
    this.logger.info('config.written', { file: this.path, fields });
    this.emitSafely('change', fields, this.config, { previous, ...(by ? { by } : {}) });
    return fields;
  }

  private reportInvalid(text: string, error: ConfigError): void {
    if (text === this.invalidText) return;
    this.invalidText = text;
    this.logger.warn('config.invalid', { file: this.path, problems: error.problems, keeping: 'last good config' });
    this.emitSafely('invalid', error);
  }

  private clearInvalid(): void {
    if (this.invalidText === null) return;
    this.invalidText = null;
    this.logger.info('config.valid_again', { file: this.path });
    this.emitSafely('recovered');
  }

  // A throwing listener must not undo a write that already happened.
  private emitSafely<K extends keyof ConfigFileEvents>(event: K, ...args: ConfigFileEvents[K]): void {
    try {
      (this.emit as (event: K, ...args: ConfigFileEvents[K]) => boolean)(event, ...args);
    } catch (error) {
      this.logger.error('config.listener_failed', { event, error });
    }
  }
}

/** Parses and validates service.json's text; throws ConfigError. */
export function parseConfigText(file: string, text: string): Parsed {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch {
    throw jsonSyntaxError(file, body);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(file, ['the file must hold a JSON object ({...})']);
  }
  return { raw: raw as RawConfig, config: validate(file, raw as RawConfig) };
}

function validate(file: string, raw: RawConfig): ServiceConfig {
  // A copy: zod passes unknown fields through by reference, and the result gets frozen.
  const result = ServiceConfigFile.safeParse(structuredClone(raw));
  if (!result.success) throw new ConfigError(file, describeIssues(result.error, raw));
  return result.data;
}

/** A valid file without auth_token gets a generated one, written back with the rest kept as it was. */
async function completeAuthToken(file: string, text: string, parsed: Parsed, logger: Logger): Promise<{ parsed: Parsed; text: string }> {
  if (parsed.config.auth_token !== undefined) return { parsed, text };
  const raw: RawConfig = { ...parsed.raw, auth_token: generateAuthToken() };
  const written = serialize(raw, detectIndent(text));
  await writeFileAtomic(file, written);
  logger.info('config.auth_token_generated', { file });
  return { parsed: { raw, config: validate(file, raw) }, text: written };
}

function changedFields(before: ServiceConfig, after: ServiceConfig, candidates?: string[]): string[] {
  const b = before as Record<string, unknown>;
  const a = after as Record<string, unknown>;
  const fields = candidates ?? [...new Set([...Object.keys(b), ...Object.keys(a)])];
  return fields.filter((field) => !isDeepStrictEqual(b[field], a[field]));
}

function serialize(raw: RawConfig, indent: string): string {
  return `${JSON.stringify(raw, null, indent)}\n`;
}

/** The indentation the user's file uses (tabs, 4 spaces...), so a write-back keeps its look. */
function detectIndent(text: string): string {
  const match = /\n([ \t]+)\S/.exec(text);
  return match ? match[1]! : '  ';
}

async function readTextOrNull(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

async function warnIfOpenToOthers(file: string, logger: Logger): Promise<void> {
  if (process.platform === 'win32') return;
  const { mode } = await stat(file);
  if ((mode & 0o077) !== 0) {
    logger.warn('config.file_readable_by_others', { file, mode: `0${(mode & 0o777).toString(8)}`, hint: `chmod 600 ${file}` });
  }
}

function warnUnknownFields(raw: RawConfig, logger: Logger): void {
  const unknown = Object.keys(raw).filter((field) => !KNOWN_FIELDS.has(field));
  if (unknown.length > 0) logger.info('config.unknown_fields', { fields: unknown, note: 'kept as written, not used' });
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
