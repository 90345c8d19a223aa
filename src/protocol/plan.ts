import * as z from 'zod';
import { command, nonEmpty } from './command-frame';
import { RequestId, Seq } from './envelope';
import { lazySchema } from './lazy-schema';

/** Most items a plan holds, and the longest item text (the `todo` tool refuses more). */
export const MAX_PLAN_ITEMS = 50;
export const MAX_PLAN_ITEM_CHARS = 300;

export const PlanStatus = lazySchema(() => z.enum(['pending', 'in_progress', 'done']));
export type PlanStatus = z.infer<typeof PlanStatus>;

export const PlanItem = lazySchema(() =>
  z.strictObject({
    text: z
      .string({ error: 'text must be a string' })
      .trim()
      .min(1, { error: 'text must not be empty' })
      .max(MAX_PLAN_ITEM_CHARS, { error: `text must be at most ${MAX_PLAN_ITEM_CHARS} characters` }),
    status: PlanStatus,
  }),
);
export type PlanItem = z.infer<typeof PlanItem>;

/** A conversation's plan: the whole checklist, as the model last wrote it with the `todo` tool. */
export const Plan = lazySchema(() => z.array(PlanItem).max(MAX_PLAN_ITEMS, { error: `a plan holds at most ${MAX_PLAN_ITEMS} items` }));
export type Plan = z.infer<typeof Plan>;

/** A plan collapsed for the conversation list ("3 of 7 done"). */
export const PlanSummary = lazySchema(() => z.object({ done: z.number().int(), total: z.number().int() }));
export type PlanSummary = z.infer<typeof PlanSummary>;

/** The conversation's latest plan (the `todo` tool's checklist); empty when the model wrote none. */
export const GetPlanCommand = lazySchema(() =>
  command('get_plan', {
    conversation_id: nonEmpty('conversation_id'),
  }),
);

export const PlanResults = lazySchema(() => ({
  get_plan: z.object({ plan: Plan }),
}));

/** The model wrote its plan with the `todo` tool: the whole checklist, to every follower of the conversation. */
export const PlanUpdatedEvent = lazySchema(() =>
  z.object({
    event: z.literal('plan.updated'),
    seq: Seq,
    id: RequestId.optional(),
    conversation_id: z.string(),
    plan: Plan,
  }),
);
export type PlanUpdatedEvent = z.infer<typeof PlanUpdatedEvent>;

export { planSummaryOf } from './plan-summary';
