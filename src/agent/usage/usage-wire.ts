import type { ConversationUsage, MessageUsage } from '../../protocol';
import type { UsageContext, UsageRow, UsageSum } from '../../store';
import { dollarsOf } from './prices';

/** Stored figures as clients see them (docs/protocol.md, "Usage and cost"). */
function figures(sum: Pick<UsageSum, 'input' | 'output' | 'cached' | 'cost_micro' | 'estimated'>) {
  return {
    input_tokens: sum.input,
    output_tokens: sum.output,
    cached_tokens: sum.cached,
    cost: sum.cost_micro === null ? null : dollarsOf(sum.cost_micro),
    estimated: sum.estimated,
  };
}

/** A reply's usage: `message.usage` of get_messages and chat.message. */
export function messageUsageOf(row: UsageRow): MessageUsage {
  return {
    provider: row.provider,
    model: row.model,
    ...figures(row),
    calls: row.calls,
    context_used: row.context_used,
    context_window: row.context_window,
  };
}

/** A conversation's totals, with the context fullness of its latest call. */
export function conversationUsageOf(usage: { sum: UsageSum; last: UsageContext } | undefined): ConversationUsage | null {
  if (!usage) return null;
  return { ...figures(usage.sum), replies: usage.sum.replies, context_used: usage.last.context_used, context_window: usage.last.context_window };
}

/** Totals of a group (a day, a model of a day) as get_usage gives them. */
export function usageSumOf(sum: UsageSum) {
  return { ...figures(sum), replies: sum.replies };
}
