import type * as z from 'zod';
import { locateJsonError } from './json-syntax';

/**
 * service.json cannot be used. `problems` holds one line per bad field (`path: reason`) or the JSON
 * syntax error with its line and column. Messages never quote the file's values, so they are safe to
 * show and log even when the bad field is a secret.
 */
export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file} is invalid: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

/** The ConfigError for a text that JSON.parse refused. */
export function jsonSyntaxError(file: string, text: string): ConfigError {
  const problem = locateJsonError(text);
  if (!problem) return new ConfigError(file, ['invalid JSON']);
  return new ConfigError(file, [`invalid JSON at line ${problem.line}, column ${problem.column}: ${problem.reason}`]);
}

/**
 * One `path: reason` line per zod issue. `raw` is the object that was validated: where its `channels`
 * is in the object form, the schema sees the array form, so array indices are turned back into the
 * names the user wrote.
 */
export function describeIssues(error: z.ZodError, raw?: Record<string, unknown>): string[] {
  const channelNames = raw && raw.channels !== null && typeof raw.channels === 'object' && !Array.isArray(raw.channels) ? Object.keys(raw.channels as Record<string, unknown>) : undefined;
  const lines: string[] = [];
  for (const issue of error.issues) {
    const path = issue.path.map((part, index) => {
      if (index === 1 && issue.path[0] === 'channels' && channelNames && typeof part === 'number') return channelNames[part] ?? String(part);
      return String(part);
    });
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) lines.push(`${[...path, key].join('.')}: unknown field`);
      continue;
    }
    const where = path.join('.');
    lines.push(where ? `${where}: ${issue.message}` : issue.message);
  }
  return [...new Set(lines)];
}
