import type { LogFields, LogLevel, Logger } from '../log/logger';

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/**
 * The relay's log: one JSON line per event on the console (Workers logs, or the Node relay's stdout).
 * Callers never pass secrets; the relay has only AUTH_TOKEN and never logs frames.
 */
export function consoleLogger(minLevel: LogLevel = 'info', bound: LogFields = {}): Logger {
  const line = (level: LogLevel, event: string, fields?: LogFields) => {
    if (RANK[level] < RANK[minLevel]) return;
    const text = JSON.stringify({ time: new Date().toISOString(), level, event, ...bound, ...fields });
    if (level === 'error' || level === 'warn') console.error(text);
    else console.log(text);
  };
  return {
    debug: (event, fields) => line('debug', event, fields),
    info: (event, fields) => line('info', event, fields),
    warn: (event, fields) => line('warn', event, fields),
    error: (event, fields) => line('error', event, fields),
    child: (fields) => consoleLogger(minLevel, { ...bound, ...fields }),
  };
}

/** The level a relay's setting names (RELAY_LOG_LEVEL, the Worker's LOG_LEVEL): debug, else info. */
export function levelOf(setting: string | undefined): LogLevel {
  return setting === 'debug' ? 'debug' : 'info';
}
