export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

/**
 * Structured logging: one event name plus fields per line. Implementations redact secrets, so callers
 * may pass fields freely, but should still never pass a secret on purpose.
 */
export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line (e.g. a connection or conversation id). */
  child(fields: LogFields): Logger;
  /**
   * A line made now (its fields merged, redacted and serialized) and written when the returned function
   * is called, stamped then, with `late` numbers (keys not among `fields`) at its end: what can be made
   * while the caller waits for something (a commit) is not made after it. Undefined: the level is off,
   * or the logger has no such thing (log the whole line at the end instead). Must not throw (it runs
   * outside its caller's try, agent.ts): a line it cannot make is answered undefined.
   */
  prepare?(level: LogLevel, event: string, fields?: LogFields): PreparedLine | undefined;
}

/**
 * A prepared line's write (Logger.prepare): stamped when called, with `late` numbers at its end. With
 * `hold`, its file write waits for the logger's next line written, a flush, or a short while (file-logger.ts
 * HELD_LINE_MS), the lines held meanwhile written together: off the path between its caller's durable point
 * and its answer, and out of the next turns' fdatasync waits; its order among the log's lines is kept.
 */
export type PreparedLine = (late?: Record<string, number>, hold?: boolean) => void;

export const nullLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return nullLogger;
  },
};
