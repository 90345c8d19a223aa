import { randomUUID } from 'node:crypto';
import type { Logger } from '../../log/logger';
import type { Message } from '../../protocol';
import type { MessageRow, NewMessage, Store } from '../../store';
import { messageOf } from '../client-message';
import { estimateTokens } from '../history';
import { ProviderError, type ChatMessage, type CompletionResult, type Provider } from '../providers/types';
import { Transcripts, transcriptOf } from '../transcript';
import { messagesTokens, type RequestBudget } from './budget';
import { cutToolOutputs, fitToBudget, lastTurnStart, sinceSummary, splitForSummary, summaryMessage, type SummaryData } from './model-view';
import { SUMMARY_INSTRUCTIONS, summarise } from './summariser';

/** Of the history's budget, the share the newest turns keep as they are when older ones are summarised. */
const KEEP_SHARE = 0.4;

export interface CompactionCall {
  conversationId: string;
  provider: Provider;
  model: string;
  budget: RequestBudget;
  signal?: AbortSignal;
  /** Each summarising call's result (the turn's usage counts them). */
  onResult?: (result: CompletionResult) => void;
  /** A summary or a failure notice was stored: the message as clients see it. */
  onStored?: (message: Message) => void;
  /** Called and awaited before a summary is asked or stored: a turn's user message is made durable (its sync asked) and told first (agent/user-commit.ts). */
  ready?: () => Promise<void>;
}

export interface ModelView {
  /** The request's messages: system messages, then the history that fits. */
  messages: ChatMessage[];
  /** What this step did to make it fit. */
  compaction?: 'summarised' | 'failed';
}

/** compact_conversation could not make a summary; the message says why (a notice was stored too). */
export class CompactionFailed extends Error {}

/**
 * Keeps what the model is sent within its window (docs/design.md, "Never forgets silently"): the
 * turns since the latest stored summary, then, when they do not fit, old tool outputs cut, then older
 * turns summarised by the model into a `summary` message stored in the conversation (originals stay).
 * A summary that cannot be made is stored as a notice, and the oldest turns are cut instead.
 */
export class Compactor {
  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    /** The conversations' transcripts, each turn's part kept while its rows are the same (the history cache's). */
    readonly transcripts = new Transcripts(),
  ) {}

  /**
   * The request's messages for a step. `mayCompact`: false once a compaction failed in this turn (the
   * turn goes on with the cut rather than asking again at every step).
   */
  async modelView(rows: readonly MessageRow[], system: readonly ChatMessage[], call: CompactionCall, mayCompact: boolean): Promise<ModelView> {
    const { summary, tail } = sinceSummary(rows);
    // The system messages, the summary and the transcript in one array: within the budget it is the view.
    const summarised = summary ? summaryMessage(summary.content) : undefined;
    const lead = summarised ? [...system, summarised] : system;
    const { messages, tokens } = this.transcripts.counted(tail, lead);
    // Counted once, by the transcript as it was made (and the summary): within the budget nothing is cut.
    if (tokens + (summarised ? estimateTokens(summarised) : 0) <= call.budget.history) return { messages };
    const history = messages.slice(system.length);
    const cut = cutToolOutputs(history, call.budget.history);
    if (messagesTokens(cut) <= call.budget.history) return { messages: [...system, ...cut] };
    await call.ready?.();
    if (mayCompact) {
      try {
        const made = await this.summarise(summary, tail, call, undefined, Math.floor(call.budget.history * KEEP_SHARE));
        const after = [summaryMessage(made.text), ...transcriptOf(made.kept)];
        return { messages: fitToBudget(system, cutToolOutputs(after, call.budget.history), call.budget.history).messages, compaction: 'summarised' };
      } catch (error) {
        if (isCancel(error, call.signal)) throw error;
        await this.notice(call, error);
      }
    }
    return { messages: fitToBudget(system, cut, call.budget.history).messages, compaction: mayCompact ? 'failed' : undefined };
  }

  /**
   * compact_conversation: summarises every turn but the newest ones now, whether or not they fit,
   * keeping `focus` in particular. The failure is stored as a notice and thrown.
   */
  async compact(rows: readonly MessageRow[], call: CompactionCall, focus?: string): Promise<{ message: Message; historyTokens: number }> {
    const { summary, tail } = sinceSummary(rows);
    try {
      // On demand, everything but the latest turn is summarised: that is what the person asked for.
      const made = await this.summarise(summary, tail, call, focus, 0);
      const view = fitToBudget([], cutToolOutputs([summaryMessage(made.text), ...transcriptOf(made.kept)], call.budget.history), call.budget.history);
      return { message: made.message, historyTokens: messagesTokens(view.messages) };
    } catch (error) {
      if (isCancel(error, call.signal)) throw error;
      await this.notice(call, error);
      throw new CompactionFailed(reasonOf(error));
    }
  }

  /** Summarises `tail` but its newest `keepTokens`' worth (after `summary`), stores it, and says what is kept. */
  private async summarise(summary: MessageRow | undefined, tail: readonly MessageRow[], call: CompactionCall, focus: string | undefined, keepTokens: number) {
    const split = keepTokens > 0 ? splitForSummary(tail, keepTokens) : lastTurnStart(tail);
    if (split === 0) throw new Error('there is nothing older than the latest turn to summarise');
    const older = tail.slice(0, split);
    const summaryTokens = Math.min(call.budget.reply, Math.max(256, Math.floor(call.budget.window / 8)));
    const spare = Math.floor(call.budget.window * 0.9) - summaryTokens - Math.ceil((SUMMARY_INSTRUCTIONS.length + (summary?.content.length ?? 0)) / 4) - 200;
    const text = await summarise({
      provider: call.provider,
      model: call.model,
      previous: summary?.content,
      rows: older,
      focus,
      chunkChars: Math.max(2_000, spare * 4),
      maxTokens: summaryTokens,
      signal: call.signal,
      onResult: call.onResult,
    });
    const data: SummaryData = { kind: 'summary', through_seq: older[older.length - 1].seq, summarised: older.length, ...(focus ? { focus } : {}) };
    const message = await this.store_(call, text, data);
    this.logger.info('compaction.summarised', { conversation: call.conversationId, messages: older.length, chars: text.length });
    // As stored (well-formed: messages.ts checkMessage), the summary the model is sent from now on.
    return { text: message.content, kept: tail.slice(split), message };
  }

  /** Tells the person a compaction failed: a notice in the conversation, never a silent cut. */
  private async notice(call: CompactionCall, error: unknown): Promise<void> {
    const reason = reasonOf(error);
    this.logger.warn('compaction.failed', { conversation: call.conversationId, error });
    const text = `Earlier turns could not be summarised (${reason}). The oldest turns are left out of what the model is sent until a summary succeeds; they stay in the history.`;
    await this.store_(call, text, { kind: 'compaction_failed', reason });
  }

  private async store_(call: CompactionCall, content: string, data: SummaryData): Promise<Message> {
    const row: NewMessage = { id: randomUUID(), conversation_id: call.conversationId, role: 'summary', content, timestamp: new Date().toISOString(), data };
    await this.store.messages.append(row);
    const message = messageOf(row);
    call.onStored?.(message);
    return message;
  }
}

/** What a person is told of the failure: the provider's message is safe to show (providers/types.ts). */
function reasonOf(error: unknown): string {
  if (error instanceof ProviderError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

function isCancel(error: unknown, signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true || (error instanceof ProviderError && error.kind === 'cancelled');
}
