import { usageSumOf } from '../agent/usage/usage-wire';
import type { ModelUsageSum } from '../store';
import type { CommandOf, ResultOf, UsageDay } from '../protocol';
import type { CommandContext } from './context';
import { readDurable } from './durable-read';
import { ownConversationsSource, type ClientSession } from './session';

const DAY_MS = 24 * 3600_000;

/** `get_usage`: sums per UTC day and model; a webhook account sees only its own turns' usage. */
export async function getUsage(command: CommandOf<'get_usage'>, session: ClientSession, ctx: CommandContext): Promise<ResultOf<'get_usage'>> {
  const fromDay = new Date(Date.now() - (command.days - 1) * DAY_MS).toISOString().slice(0, 10);
  const source = ownConversationsSource(session);
  const byDay = new Map<string, ModelUsageSum[]>();
  for (const row of ctx.store.usage.byDayAndModel(fromDay, source)) byDay.set(row.day, [...(byDay.get(row.day) ?? []), row]);
  const days: UsageDay[] = [...byDay].map(([day, models]) => ({
    day,
    ...usageSumOf(sumOf(models)),
    models: models.map((m) => ({ provider: m.provider, model: m.model, ...usageSumOf(m) })),
  }));
  await readDurable(ctx.store);
  return { days };
}

/** A day's sums from its models' (a day's cost is unknown when any model's is). */
function sumOf(models: readonly ModelUsageSum[]) {
  return {
    input: models.reduce((n, m) => n + m.input, 0),
    output: models.reduce((n, m) => n + m.output, 0),
    cached: models.reduce((n, m) => n + m.cached, 0),
    cost_micro: models.some((m) => m.cost_micro === null) ? null : models.reduce((n, m) => n + (m.cost_micro ?? 0), 0),
    estimated: models.some((m) => m.estimated),
    replies: models.reduce((n, m) => n + m.replies, 0),
  };
}
