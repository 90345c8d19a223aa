import { dollarsOf } from '../../agent/usage/prices';
import type { WebhookAccount } from '../../protocol';
import type { Store } from '../../store';
import { sourceText } from '../../protocol/sources';

/** The error code of a message refused because its account's daily budget is spent. */
export const BUDGET_EXCEEDED = 'budget_exceeded';

/** Why an account may not start another run today (its budget is reached): the same text for the sender and the owner. */
export interface BudgetRefusal {
  code: typeof BUDGET_EXCEEDED;
  error: string;
  /** When the budget is new again: the next 00:00 UTC. */
  resets_at: string;
}

/**
 * The account's refusal when this UTC day's usage of its own turns has reached its budget (tokens in +
 * out, or the cost of its priced replies); undefined while it may run. A run in progress may pass the
 * budget: it is the next run that is not started (docs/protocol.md, "Budgets").
 */
export function budgetRefusal(store: Pick<Store, 'usage'>, accountName: string, account: WebhookAccount | undefined, now = new Date()): BudgetRefusal | undefined {
  const budget = account?.budget;
  if (!budget) return undefined;
  const spent = store.usage.spent(sourceText({ kind: 'webhook', account: accountName }), now.toISOString().slice(0, 10));
  const reached =
    budget.tokens_per_day !== undefined && spent.tokens >= budget.tokens_per_day
      ? `${budget.tokens_per_day} tokens`
      : budget.cost_per_day !== undefined && dollarsOf(spent.cost_micro) >= budget.cost_per_day
        ? `$${dollars(budget.cost_per_day)}`
        : undefined;
  if (!reached) return undefined;
  const midnight = new Date(now);
  midnight.setUTCHours(24, 0, 0, 0);
  return { code: BUDGET_EXCEEDED, error: `daily budget of ${reached} reached; resets at 00:00 UTC`, resets_at: midnight.toISOString() };
}

/** `0.10`, `2.00`; a budget finer than a cent as written (`0.005`), never rounded to another figure. */
function dollars(amount: number): string {
  const cents = amount.toFixed(2);
  return Number(cents) === amount ? cents : String(amount);
}
