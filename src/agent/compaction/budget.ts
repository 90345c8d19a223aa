import type { ServiceConfig } from '../../protocol';
import { estimateTokens } from '../history';
import type { ChatMessage, ToolSpec } from '../providers/types';
import { contextWindowOf } from '../usage/prices';

/**
 * The window assumed for a model nobody names (not in the price table, not in service.json's `prices`,
 * not told by its server): 32,768 tokens, what most local models of 2025-26 are served with and
 * small enough that a hosted model is never refused. docs/protocol.md, "Context window".
 */
export const DEFAULT_CONTEXT_WINDOW = 32_768;
/** Room kept for the reply when service.json sets no `max_tokens`. */
export const DEFAULT_REPLY_TOKENS = 4_096;
/**
 * estimateTokens counts 4 characters a token; real tokenizers give code, JSON and non-English text
 * more tokens than that, so a tenth of the window is kept spare for the estimate's error.
 */
const ESTIMATE_SPARE = 0.1;

/** How a request's tokens are shared out in the model's window. */
export interface RequestBudget {
  /** The model's context window (tokens). */
  window: number;
  /** Kept for the reply; also the `max_tokens` sent when service.json sets one. */
  reply: number;
  /** What the system prompt and the tools' definitions cost. */
  fixed: number;
  /** What the conversation's messages may cost. */
  history: number;
}

/** The window for this model: service.json's `prices`, the server's figure, the shipped table, else the default. */
export function windowOf(config: Pick<ServiceConfig, 'prices'>, provider: string, model: string, reported?: number): number {
  return contextWindowOf(config, provider, model, reported) ?? DEFAULT_CONTEXT_WINDOW;
}

/** The specs counted last: the agent offers the same array while the tools stay (agent.ts `offer`), counted once. */
let counted: { tools: readonly ToolSpec[]; tokens: number } | undefined;

export function toolsTokens(tools: readonly ToolSpec[] | undefined): number {
  if (!tools || tools.length === 0) return 0;
  if (counted?.tools !== tools) counted = { tools, tokens: Math.ceil(JSON.stringify(tools).length / 4) };
  return counted.tokens;
}

/** What `messages` cost, those from `from` on. */
export function messagesTokens(messages: readonly ChatMessage[], from = 0): number {
  let tokens = 0;
  for (let i = from; i < messages.length; i += 1) tokens += estimateTokens(messages[i]);
  return tokens;
}

/**
 * Shares out the window: the reply's room (max_tokens, at most half the window), the estimate's spare,
 * the system prompt and tools; the rest is the history's. Never negative: a window too small for the
 * tools leaves the history 0 and the cut keeps only the newest message (cut to fit, see fitToBudget).
 */
export function requestBudget(window: number, maxTokens: number | undefined, system: readonly ChatMessage[], tools: readonly ToolSpec[] | undefined): RequestBudget {
  const reply = Math.min(maxTokens ?? DEFAULT_REPLY_TOKENS, Math.floor(window / 2));
  const fixed = messagesTokens(system) + toolsTokens(tools);
  const history = Math.max(0, Math.floor(window * (1 - ESTIMATE_SPARE)) - reply - fixed);
  return { window, reply, fixed, history };
}
