import type { ServiceConfig } from '../../protocol';
import type { NewUsage } from '../../store';
import type { CompletionResult } from '../providers/types';
import { contextWindowOf, microDollarsOf, priceOf } from './prices';

/**
 * The usage of one turn: every provider call it made (a tool round trip makes two), summed, priced
 * call by call with the table in force for that call. Stored with the reply (or, for a turn that ended
 * without one, with the message that started it: the tokens were spent all the same).
 */
export class TurnUsage {
  private input = 0;
  private output = 0;
  private cached = 0;
  /** Millionths of a dollar; null once a call of an unknown price was made. */
  private micro: number | null = 0;
  private estimated = false;
  private calls = 0;
  /** Calls whose provider reported figures (some OpenAI-compatible servers report none). */
  private reported = 0;
  private provider = '';
  private model = '';
  private contextUsed: number | null = null;
  private contextWindow: number | null = null;

  /**
   * Counts one provider call's answer. A call without figures adds no tokens and makes the cost unknown;
   * a turn none of whose calls had figures stores nothing (rather than zeros).
   */
  add(config: Pick<ServiceConfig, 'prices'>, provider: string, model: string, result: CompletionResult): void {
    const usage = result.usage ?? {};
    if (result.usage) this.reported += 1;
    const input = usage.input_tokens ?? 0;
    const output = usage.output_tokens ?? 0;
    const cached = usage.cached_tokens ?? 0;
    this.calls += 1;
    this.provider = provider;
    this.model = model;
    this.input += input;
    this.output += output;
    this.cached += cached;
    if (usage.estimated) this.estimated = true;
    const price = priceOf(config, provider, model);
    const known = price !== undefined && usage.input_tokens !== undefined && usage.output_tokens !== undefined;
    const written = usage.cache_write_tokens ?? 0;
    this.micro = known && this.micro !== null ? this.micro + microDollarsOf(price, { input, output, cached, written }) : null;
    this.contextUsed = usage.input_tokens ?? null;
    this.contextWindow = contextWindowOf(config, provider, model, result.context_window);
  }

  /**
   * After a compaction made outside a turn: how full the window is now (an estimate of the next
   * request), so the context meter does not go on showing the fullness from before it.
   */
  contextNow(used: number, window: number): void {
    this.contextUsed = used;
    this.contextWindow = window;
  }

  get empty(): boolean {
    return this.reported === 0;
  }

  /** The row to store under `messageId` (a turn's figures, added to any already stored under it). */
  row(messageId: string, conversationId: string, source: string, now: Date): NewUsage {
    return {
      message_id: messageId,
      conversation_id: conversationId,
      source,
      day: now.toISOString().slice(0, 10),
      updated_at: now.toISOString(),
      provider: this.provider,
      model: this.model,
      input: this.input,
      output: this.output,
      cached: this.cached,
      cost_micro: this.micro,
      estimated: this.estimated,
      calls: this.calls,
      context_used: this.contextUsed,
      context_window: this.contextWindow,
    };
  }
}
