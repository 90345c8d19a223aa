import * as z from 'zod';
import { MAX_PLAN_ITEM_CHARS, MAX_PLAN_ITEMS, Plan, planSummaryOf } from '../../protocol/plan';
import { ToolError, type Tool, type ToolSource } from './types';
import { lazySchema } from '../../protocol/lazy-schema';

/** What the todo tool needs of the store (`store.conversations`), declared here so it does not depend on it. */
export interface PlanStore {
  setPlan(conversationId: string, plan: Plan): Promise<boolean>;
}

const TodoArgs = lazySchema(() => z.strictObject({ items: Plan }));

const INPUT_SCHEMA = {
  type: 'object',
  properties: {
    items: {
      type: 'array',
      maxItems: MAX_PLAN_ITEMS,
      description: 'The whole plan, every item each time (it replaces the previous one), in order.',
      items: {
        type: 'object',
        properties: {
          text: { type: 'string', maxLength: MAX_PLAN_ITEM_CHARS, description: 'One step, short.' },
          status: { type: 'string', enum: ['pending', 'in_progress', 'done'] },
        },
        required: ['text', 'status'],
        additionalProperties: false,
      },
    },
  },
  required: ['items'],
  additionalProperties: false,
};

/**
 * `todo`: the model shows the user its plan as a checklist and updates it as it goes. It changes nothing
 * outside its conversation (the plan is stored with it and shown to its followers), so it is
 * `conversationOnly`: it runs without the permission gate (docs/protocol.md, "The plan").
 */
export function createTodoToolSource(plans: PlanStore): ToolSource {
  const todo: Tool = {
    name: 'todo',
    description:
      'Show the user your plan for a task of several steps as a checklist, and keep it current: call it with the ' +
      'whole list (each item pending, in_progress or done) when you make the plan and again whenever a step changes.',
    inputSchema: INPUT_SCHEMA,
    parameters: { items: 'array' },
    conversationOnly: true,
    async run(args, context) {
      const parsed = TodoArgs.safeParse(args);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new ToolError(`todo: ${issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''}${issue.message}`);
      }
      const plan = parsed.data.items;
      await plans.setPlan(context.conversationId, plan);
      context.onPlan?.(plan);
      const { done, total } = planSummaryOf(plan);
      return { content: `Plan updated: ${done} of ${total} done.` };
    },
  };
  // The same array each time: the registry keeps its merged list while its sources' lists are the same.
  const tools = [todo];
  return { name: 'todo', followsArea: true, tools: async () => tools };
}
