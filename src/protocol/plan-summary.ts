import type { Plan, PlanSummary } from './plan';

/** A plan collapsed to its counts. Free of zod, so the chat page bundles it alone. */
export function planSummaryOf(plan: Plan): PlanSummary {
  return { done: plan.filter((item) => item.status === 'done').length, total: plan.length };
}
