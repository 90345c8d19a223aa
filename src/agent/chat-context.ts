import type { ContextItem } from '../protocol';

/** What a user message stores beside its text (messages.data) when its chat carried `context`. */
export interface UserMessageData {
  context: ContextItem[];
}

/** The context stored with a user message row, if any. */
export function contextOf(data: unknown): ContextItem[] | undefined {
  const context = (data as Partial<UserMessageData> | null)?.context;
  return Array.isArray(context) && context.length > 0 ? context : undefined;
}

/**
 * The user's turn as the model reads it: the attached context first, each item under a heading naming
 * its file and lines, in a fence longer than any run of backticks in its text (so a file holding ```
 * cannot end its block early and pass its rest off as the user's words), then the message.
 */
export function withContext(message: string, context: readonly ContextItem[] | undefined): string {
  if (!context || context.length === 0) return message;
  const blocks = context.map((item) => {
    const lines = item.range ? (item.range.start_line === item.range.end_line ? `, line ${item.range.start_line}` : `, lines ${item.range.start_line}-${item.range.end_line}`) : '';
    return `[${item.kind}] ${item.path}${lines}\n${fenced(item.text)}`;
  });
  return `The user attached this context from the editor:\n\n${blocks.join('\n\n')}\n\n---\n\n${message}`;
}

/**
 * `text` in a code fence longer than any run of backticks in it, so that text from a file cannot end its
 * block early and pass what follows off as someone else's words.
 */
export function fenced(text: string): string {
  const fence = '`'.repeat(Math.max(3, longestBacktickRun(text) + 1));
  return `${fence}\n${text}\n${fence}`;
}

function longestBacktickRun(text: string): number {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  return longest;
}
