import { MOMENT_HEADING } from '../../src/agent/prompt/environment';

/**
 * The note the service sends last in each request of a turn (time, git, sender: src/agent/prompt/
 * environment.ts): the fakes echo what the user typed, so they look past it.
 */
export function isServiceNote(content: unknown): boolean {
  return typeof content === 'string' && content.startsWith(MOMENT_HEADING);
}

/** A request's messages as the conversation stands, without the service's note that ends it (when there is one). */
export function withoutNote<T extends { role?: string; content?: unknown }>(messages: readonly T[]): T[] {
  const last = messages.at(-1);
  if (last?.role !== 'user') return [...messages];
  const content = last.content;
  const note = isServiceNote(content) || (Array.isArray(content) && content.length > 0 && content.every((block: { text?: unknown }) => isServiceNote(block?.text)));
  return note ? messages.slice(0, -1) : [...messages];
}
