import * as z from 'zod';
import { command } from './command-frame';
import { lazySchema } from './lazy-schema';

/**
 * What replies cost: token usage per reply, conversation and day, prices, context fullness and the
 * webhook accounts' daily budgets (docs/protocol.md, "Usage and cost").
 */

/** A price in US dollars per million tokens. */
const perMillion = lazySchema(() => z.number({ error: 'expected US dollars per million tokens (a number)' }).nonnegative({ error: 'must not be negative' }).finite());

/**
 * One entry of service.json's `prices`, keyed `"<provider>/<model>"` or `"<model>"`: dollars per million
 * input, output, cached (cache-read) and cache-write input tokens (Anthropic bills writes apart). `cached`
 * and `cache_write` default to `input`. `context_window` (tokens) overrides the shipped default for the
 * model and sizes what the agent sends it; an entry may give only it (`{"context_window": 8192}` for a
 * local model), or only the prices. Prices come as a pair: input with output.
 */
export const PriceEntry = lazySchema(() =>
  z
    .strictObject({
      input: perMillion.optional(),
      output: perMillion.optional(),
      cached: perMillion.optional(),
      cache_write: perMillion.optional(),
      context_window: z.number({ error: 'expected a number of tokens' }).int({ error: 'expected a whole number of tokens' }).positive({ error: 'must be positive' }).optional(),
    })
    .superRefine((e, ctx) => {
      if (e.input !== undefined && e.output === undefined) ctx.addIssue({ code: 'custom', path: ['output'], message: 'expected US dollars per million output tokens, with the input price' });
      if (e.input === undefined && e.output !== undefined) ctx.addIssue({ code: 'custom', path: ['input'], message: 'expected US dollars per million input tokens, with the output price' });
      if (e.input === undefined && e.output === undefined && e.context_window === undefined) {
        ctx.addIssue({ code: 'custom', path: ['context_window'], message: 'an entry needs input and output prices, a context_window, or both' });
      }
    }),
);
export type PriceEntry = z.infer<typeof PriceEntry>;

export const Prices = lazySchema(() => z.record(z.string().min(1, { error: 'a price key must not be empty' }), PriceEntry));
export type Prices = z.infer<typeof Prices>;

/** A webhook account's daily budget (UTC days): tokens (input + output) and/or dollars. */
export const UsageBudget = lazySchema(() =>
  z
    .strictObject({
      tokens_per_day: z.number({ error: 'expected a number of tokens' }).int({ error: 'expected a whole number of tokens' }).positive({ error: 'must be positive' }).optional(),
      cost_per_day: z.number({ error: 'expected US dollars (a number)' }).positive({ error: 'must be positive' }).finite().optional(),
    })
    .refine((budget) => budget.tokens_per_day !== undefined || budget.cost_per_day !== undefined, {
      error: 'a budget needs tokens_per_day, cost_per_day, or both',
    }),
);
export type UsageBudget = z.infer<typeof UsageBudget>;

/** Token figures, summed over the provider calls they cover. */
const tokenFigures = lazySchema(() => ({
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  /** Of the input tokens, those the provider read from its prompt cache (billed at the cached price). */
  cached_tokens: z.number().int(),
  /** US dollars; null when a price is unknown for any call counted (never a guess). */
  cost: z.number().nullable(),
  /** True when some figure was counted locally (a provider that reports none, e.g. some editor models). */
  estimated: z.boolean(),
}));

/** How full the context window was on the last provider call: its input tokens of the window. */
const contextFigures = lazySchema(() => ({
  context_used: z.number().int().nullable(),
  /** The model's context window in tokens; null when unknown. */
  context_window: z.number().int().nullable(),
}));

/** A reply's usage (on get_messages rows and chat.message): every provider call of its turn, summed. */
export const MessageUsage = lazySchema(() =>
  z.object({
    provider: z.string(),
    model: z.string(),
    ...tokenFigures,
    /** Provider calls of the turn (a tool round trip makes two). */
    calls: z.number().int(),
    ...contextFigures,
  }),
);
export type MessageUsage = z.infer<typeof MessageUsage>;

/** A conversation's totals (list_conversations rows), with the context fullness of its last call. */
export const ConversationUsage = lazySchema(() => z.object({ ...tokenFigures, replies: z.number().int(), ...contextFigures }));
export type ConversationUsage = z.infer<typeof ConversationUsage>;

export const UsageByModel = lazySchema(() => z.object({ provider: z.string(), model: z.string(), ...tokenFigures, replies: z.number().int() }));
export type UsageByModel = z.infer<typeof UsageByModel>;

/** One UTC day of get_usage. */
export const UsageDay = lazySchema(() => z.object({ day: z.string(), ...tokenFigures, replies: z.number().int(), models: z.array(UsageByModel) }));
export type UsageDay = z.infer<typeof UsageDay>;

/** The most days get_usage goes back. */
export const MAX_USAGE_DAYS = 366;

/** Token usage and cost per UTC day (and per model), the last `days` days, today included (docs/protocol.md, "Usage and cost"). */
export const GetUsageCommand = lazySchema(() =>
  command('get_usage', {
    days: z
      .number({ error: 'days must be an integer' })
      .int({ error: 'days must be an integer' })
      .min(1, { error: 'days must be at least 1' })
      .max(MAX_USAGE_DAYS, { error: `days must be at most ${MAX_USAGE_DAYS}` })
      .default(30),
  }),
);

export const UsageResults = lazySchema(() => ({
  /** Days with usage, newest first (days without any are left out). */
  get_usage: z.object({ days: z.array(UsageDay) }),
}));
