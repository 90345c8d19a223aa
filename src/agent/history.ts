import type { ChatMessage, ToolCall } from './providers/types';

/** What an attached image costs a vision model (a 2048-pixel photo is about 1,600 tokens); a file's note costs less. */
const ATTACHMENT_TOKENS = 1600;

/**
 * The length of tool calls' JSON, by their array: a transcript's messages are kept from step to step
 * (transcript.ts Transcripts), and every call of the history was stringified again at each step only to
 * be counted. An array is not changed once its message is made (toModelNames makes new ones).
 */
const callsChars = new WeakMap<readonly ToolCall[], number>();

function toolCallsChars(calls: readonly ToolCall[]): number {
  let chars = callsChars.get(calls);
  if (chars === undefined) {
    chars = JSON.stringify(calls).length;
    callsChars.set(calls, chars);
  }
  return chars;
}

/** A rough token estimate (about 4 characters a token) that errs on the side of fitting. */
export function estimateTokens(message: ChatMessage): number {
  let chars = message.content.length;
  if (message.role === 'assistant' && message.tool_calls) chars += toolCallsChars(message.tool_calls);
  const attached = message.role === 'user' || message.role === 'system' ? (message.attachments?.length ?? 0) : 0;
  return Math.ceil(chars / 4) + 4 + attached * ATTACHMENT_TOKENS;
}

/**
 * Fits a conversation into `budget` tokens: the system prompt and the newest message are always kept,
 * then turns are added from newest to oldest while they fit. A tool result is never kept without the
 * assistant message that asked for it.
 */
export function fitHistory(system: ChatMessage | undefined, history: ChatMessage[], budget: number): ChatMessage[] {
  if (history.length === 0) return system ? [system] : [];
  const newest = history[history.length - 1];
  let used = (system ? estimateTokens(system) : 0) + estimateTokens(newest);
  let start = history.length - 1;
  for (let i = history.length - 2; i >= 0; i -= 1) {
    const cost = estimateTokens(history[i]);
    if (used + cost > budget) break;
    used += cost;
    start = i;
  }
  while (start < history.length - 1 && history[start].role === 'tool') start += 1;
  const kept = history.slice(start);
  return system ? [system, ...kept] : kept;
}
