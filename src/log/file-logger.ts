import { join } from 'node:path';
import { isoTime } from '../platform/iso-time';
import { LOG_FILE_NAME } from '../platform/paths';
import type { LogFields, Logger, LogLevel, PreparedLine } from './logger';
import { Redactor } from './redact';
import { RotatingFile } from './rotating-file';

export const DEFAULT_LOG_MAX_BYTES = 5 * 1024 * 1024;
export const DEFAULT_LOG_MAX_FILES = 3;
/** A line above this size is replaced by a note saying how big it was. */
export const MAX_LOG_LINE_BYTES = 256 * 1024;
/**
 * How long a held line (PreparedLine's `hold`) waits at most for the next line written to go with it: in a
 * run of turns, the turns' lines of this long are written together, in one write, by this timer. Not by the
 * next prepare: a turn prepares its line while its reply's fdatasync runs, and a write made then (on the loop's
 * thread) lengthened that wait's work, which is as long as the sync in many turns (s34, path34 in docs/design.md).
 */
export const HELD_LINE_MS = 100;

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const RESERVED = new Set(['time', 'level', 'event']);

export interface FileLoggerOptions {
  /** The log file, e.g. `<dataDir>/service.log`. */
  file: string;
  /** Lines below this level are dropped (default info). */
  level?: LogLevel;
  /** Rotate at this size (default 5 MiB). */
  maxBytes?: number;
  /** Rotated files kept, service.log.1..N (default 3). */
  maxFiles?: number;
  /** Also print a short human form: true for stderr, or a stream (headless CLI). */
  mirror?: boolean | NodeJS.WritableStream;
  /** Minimum level of the mirror (default: `level`). */
  mirrorLevel?: LogLevel;
  /** Shared redactor (keep it fed with the config's secrets); a fresh one if omitted. */
  redactor?: Redactor;
  /** Fields on every line. */
  fields?: LogFields;
  /** Lines may be appended synchronously on the loop's thread (RotatingFileOptions.writeOnLoop; default true). */
  writeOnLoop?: boolean;
  /** How long a held line waits at most (ms; default HELD_LINE_MS). */
  holdMs?: number;
}

/** What a FileLogger and its children share: one file, one redactor, one level. */
class LogCore {
  level: number;
  mirrorLevel: number;
  readonly file: RotatingFile;
  readonly mirror: NodeJS.WritableStream | null;
  readonly redactor: Redactor;
  /** Lines stamped and waiting to be written (PreparedLine's `hold`), oldest first: each gives its text for the file. */
  private held: Array<() => string> = [];
  /** Writes the held lines `holdMs` after the first (null: not set). */
  private heldTimer: NodeJS.Timeout | null = null;
  private readonly holdMs: number;

  constructor(options: FileLoggerOptions) {
    this.level = RANK[options.level ?? 'info'];
    this.mirrorLevel = RANK[options.mirrorLevel ?? options.level ?? 'info'];
    this.holdMs = options.holdMs ?? HELD_LINE_MS;
    this.redactor = options.redactor ?? new Redactor();
    this.mirror = options.mirror === true ? process.stderr : options.mirror || null;
    this.file = new RotatingFile(options.file, {
      maxBytes: options.maxBytes ?? DEFAULT_LOG_MAX_BYTES,
      maxFiles: options.maxFiles ?? DEFAULT_LOG_MAX_FILES,
      writeOnLoop: options.writeOnLoop,
      onError: (error) => {
        // Through the redactor too: a path or errno text is harmless, but nothing leaves unscrubbed.
        const message = this.redactor.redactText(error instanceof Error ? error.message : String(error));
        process.stderr.write(`remote-assistant: cannot write the log file ${options.file}: ${message}\n`);
      },
    });
  }

  log(level: LogLevel, event: string, base: LogFields | undefined, fields: LogFields | undefined): void {
    this.prepare(level, event, base, fields)?.();
  }

  /**
   * One line: its fields merged, redacted and serialized now, stamped and written when the returned
   * function is called (Logger.prepare), `late` numbers then added at its end; with `hold`, stamped then
   * and written by the next line written (not held), a flush, or HELD_LINE_MS after the first line held,
   * whichever comes first, together with the lines held before it in one write (in order). Undefined when
   * the level is off (or making it failed: logging must never take the service down).
   */
  prepare(level: LogLevel, event: string, base: LogFields | undefined, fields: LogFields | undefined): PreparedLine | undefined {
    const rank = RANK[level];
    const toFile = rank >= this.level;
    const toMirror = this.mirror !== null && rank >= this.mirrorLevel;
    if (!toFile && !toMirror) return undefined;
    try {
      // The leading empty spread: on Node 20 `{ ...base, ...fields }` gives each object a hidden class of its
      // own, made at ~1 us; this one shares them (docs/design.md, "(s19, turn19e)"). Same result.
      const merged = base && fields ? { ...{}, ...base, ...fields } : (fields ?? base ?? {});
      const clean = this.redactor.redactFields(merged);
      const named = this.redactor.redactText(String(event));
      // Without `time`, which is first in the line and taken when it is written (or held).
      const rest = JSON.stringify(recordOf({ level, event: named }, clean));
      // The line's text for the file ('' when it goes only to the mirror, or failed); the mirror's is written now.
      const text = (stamp: number, late: Record<string, number> | undefined): string => {
        try {
          // An ISO time is JSON as it is (digits, '-', ':', '.', 'T', 'Z', '+'); isoTime keeps its minute's text.
          const time = isoTime(stamp);
          // A late key the line already has is dropped (one key once in a line).
          const added = late ? this.redactor.redactFields(Object.fromEntries(Object.entries(late).filter(([key]) => !(key in clean)))) : undefined;
          const tail = added ? JSON.stringify(recordOf({}, added)) : '{}';
          const line = `{"time":"${time}",${tail === '{}' ? rest.slice(1) : `${rest.slice(1, -1)},${tail.slice(1)}`}`;
          if (toMirror) this.writeMirror(new Date(stamp), level, named, added ? { ...clean, ...added } : clean);
          return toFile ? serializeLine(line, time, level, named) : '';
        } catch {
          // Logging must never take the service down.
          return '';
        }
      };
      return (late, hold) => {
        const stamp = Date.now();
        if (hold) return this.hold(() => text(stamp, late));
        this.writeFile(this.heldText() + text(stamp, late));
      };
    } catch {
      return undefined;
    }
  }

  /** Writes the held lines now, oldest first, in one write. */
  release(): void {
    this.writeFile(this.heldText());
  }

  /** The held lines' text, oldest first (none held: ''); they are no longer held. */
  private heldText(): string {
    if (this.held.length === 0) return '';
    const lines = this.held;
    this.held = [];
    let text = '';
    for (const line of lines) text += line();
    return text;
  }

  private writeFile(text: string): void {
    if (text.length > 0) this.file.write(text);
  }

  private hold(line: () => string): void {
    this.held.push(line);
    // One timer for a run of held lines, not one each: when it fires, what is held then is written.
    this.heldTimer ??= setTimeout(() => {
      this.heldTimer = null;
      this.release();
    }, this.holdMs).unref();
  }

  private writeMirror(time: Date, level: LogLevel, event: string, fields: Record<string, unknown>): void {
    const clock = `${pad(time.getHours())}:${pad(time.getMinutes())}:${pad(time.getSeconds())}`;
    const parts = [clock, level.toUpperCase().padEnd(5), event];
    for (const [key, value] of Object.entries(fields)) {
      if (value === undefined) continue;
      parts.push(`${key}=${humanValue(value)}`);
    }
    try {
      this.mirror!.write(`${parts.join(' ')}\n`);
    } catch {
      // A closed stderr is not worth crashing for.
    }
  }
}

/** `fields` after `head`, a reserved name (time, level, event) among them renamed `_name`. */
function recordOf(head: Record<string, unknown>, fields: Record<string, unknown>): Record<string, unknown> {
  const record = head;
  for (const [key, value] of Object.entries(fields)) record[RESERVED.has(key) ? `_${key}` : key] = value;
  return record;
}

function serializeLine(line: string, time: string, level: LogLevel, event: string): string {
  // A UTF-16 unit is at most 3 bytes of UTF-8: most lines need no count (the file's write encodes them anyway).
  if (line.length * 3 <= MAX_LOG_LINE_BYTES || Buffer.byteLength(line) <= MAX_LOG_LINE_BYTES) return `${line}\n`;
  return `${JSON.stringify({ time, level, event, truncated: true, line_bytes: Buffer.byteLength(line) })}\n`;
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

function humanValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  if (value !== null && typeof value === 'object' && 'message' in value && 'name' in value && 'stack' in value) {
    const error = value as { name: unknown; message: unknown };
    return JSON.stringify(`${String(error.name)}: ${String(error.message)}`);
  }
  return JSON.stringify(value) ?? String(value);
}

/** A logger that adds fields to every line of its parent's. */
class BoundLogger implements Logger {
  constructor(
    private readonly core: LogCore,
    private readonly fields: LogFields,
  ) {}

  debug(event: string, fields?: LogFields): void {
    this.core.log('debug', event, this.fields, fields);
  }
  info(event: string, fields?: LogFields): void {
    this.core.log('info', event, this.fields, fields);
  }
  warn(event: string, fields?: LogFields): void {
    this.core.log('warn', event, this.fields, fields);
  }
  error(event: string, fields?: LogFields): void {
    this.core.log('error', event, this.fields, fields);
  }
  child(fields: LogFields): Logger {
    return new BoundLogger(this.core, { ...{}, ...this.fields, ...fields }); // leading `...{}`: see FileLogger.prepare
  }
  prepare(level: LogLevel, event: string, fields?: LogFields): PreparedLine | undefined {
    return this.core.prepare(level, event, this.fields, fields);
  }
}

/**
 * The service's log: JSON lines `{"time","level","event",...fields}` appended to service.log, every
 * line scrubbed by the redactor, rotated by size, optionally mirrored to stderr in a short form.
 */
export class FileLogger implements Logger {
  private readonly core: LogCore;
  private readonly root: BoundLogger;

  constructor(options: FileLoggerOptions) {
    this.core = new LogCore(options);
    this.root = new BoundLogger(this.core, options.fields ?? {});
  }

  /** A logger writing `<dataDir>/service.log`. */
  static inDataDir(dataDir: string, options: Omit<FileLoggerOptions, 'file'> = {}): FileLogger {
    return new FileLogger({ ...options, file: join(dataDir, LOG_FILE_NAME) });
  }

  get file(): string {
    return this.core.file.file;
  }

  get redactor(): Redactor {
    return this.core.redactor;
  }

  /** Changes the minimum level of this logger and all its children (and of the mirror, if given). */
  setLevel(level: LogLevel, mirrorLevel?: LogLevel): void {
    this.core.level = RANK[level];
    if (mirrorLevel) this.core.mirrorLevel = RANK[mirrorLevel];
  }

  debug(event: string, fields?: LogFields): void {
    this.root.debug(event, fields);
  }
  info(event: string, fields?: LogFields): void {
    this.root.info(event, fields);
  }
  warn(event: string, fields?: LogFields): void {
    this.root.warn(event, fields);
  }
  error(event: string, fields?: LogFields): void {
    this.root.error(event, fields);
  }

  child(fields: LogFields): Logger {
    return this.root.child(fields);
  }

  prepare(level: LogLevel, event: string, fields?: LogFields): PreparedLine | undefined {
    return this.root.prepare(level, event, fields);
  }

  /** Waits until every line logged so far is written. */
  flush(): Promise<void> {
    this.core.release();
    return this.core.file.flush();
  }

  /** Flushes and closes the file; lines logged afterwards are dropped. */
  close(): Promise<void> {
    this.core.release();
    return this.core.file.close();
  }
}
