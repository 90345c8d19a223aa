/**
 * Prices and context windows of models: shipped defaults for common OpenAI and Anthropic models, which
 * service.json's `prices` overrides (or extends: any provider, any model). A model without a known
 * price costs null ("—"), never a guess.
 */
import type { PriceEntry, Prices, ServiceConfig } from '../../protocol';

/** An entry that prices the model (some entries give only its context_window). */
export type Price = PriceEntry & { input: number; output: number };

const priced = (entry: PriceEntry | undefined): Price | undefined => (entry?.input !== undefined && entry.output !== undefined ? (entry as Price) : undefined);
const windowed = (entry: PriceEntry | undefined): number | undefined => entry?.context_window;

/**
 * Shipped defaults, US dollars per million tokens; `cached` is the cache-read price, `context_window`
 * the model's input window in tokens. DEFAULTS: service.json's `prices` overrides any of them.
 * Sources (list prices, standard tier, as published in November 2026's pages):
 * - OpenAI: https://openai.com/api/pricing and https://platform.openai.com/docs/pricing ("Cached input");
 *   windows from https://platform.openai.com/docs/models.
 * - Anthropic: https://www.anthropic.com/pricing and https://docs.claude.com/en/docs/about-claude/pricing
 *   ("Cache hits & refreshes"); windows from https://docs.claude.com/en/docs/about-claude/models/overview.
 * Anthropic bills writes to its (5-minute) cache at 1.25x the input price (`cache_write`).
 */
export const DEFAULT_PRICES: Readonly<Prices> = deepFrozen({
  'openai/gpt-5': { input: 1.25, cached: 0.125, output: 10, context_window: 400_000 },
  'openai/gpt-5-mini': { input: 0.25, cached: 0.025, output: 2, context_window: 400_000 },
  'openai/gpt-5-nano': { input: 0.05, cached: 0.005, output: 0.4, context_window: 400_000 },
  'openai/gpt-4.1': { input: 2, cached: 0.5, output: 8, context_window: 1_047_576 },
  'openai/gpt-4.1-mini': { input: 0.4, cached: 0.1, output: 1.6, context_window: 1_047_576 },
  'openai/gpt-4.1-nano': { input: 0.1, cached: 0.025, output: 0.4, context_window: 1_047_576 },
  'openai/gpt-4o': { input: 2.5, cached: 1.25, output: 10, context_window: 128_000 },
  'openai/gpt-4o-mini': { input: 0.15, cached: 0.075, output: 0.6, context_window: 128_000 },
  'openai/o3': { input: 2, cached: 0.5, output: 8, context_window: 200_000 },
  'openai/o4-mini': { input: 1.1, cached: 0.275, output: 4.4, context_window: 200_000 },
  'anthropic/claude-opus-4-5': { input: 5, cached: 0.5, cache_write: 6.25, output: 25, context_window: 200_000 },
  'anthropic/claude-opus-4-1': { input: 15, cached: 1.5, cache_write: 18.75, output: 75, context_window: 200_000 },
  'anthropic/claude-opus-4': { input: 15, cached: 1.5, cache_write: 18.75, output: 75, context_window: 200_000 },
  'anthropic/claude-sonnet-4-5': { input: 3, cached: 0.3, cache_write: 3.75, output: 15, context_window: 200_000 },
  'anthropic/claude-sonnet-4': { input: 3, cached: 0.3, cache_write: 3.75, output: 15, context_window: 200_000 },
  'anthropic/claude-3-7-sonnet': { input: 3, cached: 0.3, cache_write: 3.75, output: 15, context_window: 200_000 },
  'anthropic/claude-haiku-4-5': { input: 1, cached: 0.1, cache_write: 1.25, output: 5, context_window: 200_000 },
  'anthropic/claude-3-5-haiku': { input: 0.8, cached: 0.08, cache_write: 1, output: 4, context_window: 200_000 },
});

/**
 * A dated or `-latest` release of a listed model is the listed model (`gpt-4o-2024-08-06`,
 * `claude-sonnet-4-5-20250929`); any other suffix (`gpt-4o-audio-preview`) is another model.
 */
const RELEASE_SUFFIX = /^-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$/;

function deepFrozen(table: Prices): Readonly<Prices> {
  for (const entry of Object.values(table)) Object.freeze(entry);
  return Object.freeze(table);
}

/**
 * lookup's answers, by table, for tables that cannot change: frozen, with their entries (the shipped
 * one; service.json's, deep-frozen when loaded: config/config-file.ts). A new config is a new table.
 * Every step of every turn asked up to six times, each a scan of the table for a model it does not name.
 */
const answers = new Map<(entry: PriceEntry | undefined) => unknown, WeakMap<object, Map<string, unknown> | null>>();
/** Models remembered a table (a table is asked of few: the configured ones). */
const MAX_ANSWERS = 64;

/**
 * What `table` says of the model (`pick`: its price, or its window): `<provider>/<model>` first, then
 * `<model>`, each exactly or as a release of it. An entry that does not say it is passed over.
 */
function lookup<T>(table: Readonly<Prices>, provider: string, model: string, pick: (entry: PriceEntry | undefined) => T | undefined): T | undefined {
  for (const answer of recent) if (answer.table === table && answer.pick === pick && answer.model === model && answer.provider === provider) return answer.found as T | undefined;
  if (!Object.isFrozen(table)) return search(table, provider, model, pick);
  let byTable = answers.get(pick);
  if (!byTable) answers.set(pick, (byTable = new WeakMap()));
  let known = byTable.get(table);
  // Its entries are looked at once: frozen they stay so, one that is not (null) leaves the table unkept.
  if (known === undefined) byTable.set(table, (known = Object.values(table).every((entry) => Object.isFrozen(entry)) ? new Map() : null));
  if (known === null) return search(table, provider, model, pick);
  const key = `${provider.length}:${provider}/${model}`;
  let found: T | undefined;
  if (known.has(key)) found = known.get(key) as T | undefined;
  else {
    found = search(table, provider, model, pick);
    // Cleared only to add a new answer (review18b: cleared at every answer found in a full map before).
    if (known.size >= MAX_ANSWERS) known.clear();
    known.set(key, found);
  }
  recent.unshift({ table, pick, provider, model, found });
  if (recent.length > RECENT_ANSWERS) recent.pop();
  return found;
}

/**
 * The last answers of kept tables (lookup's), looked at first: a step asks the same few (its model's
 * window and price, of the config's table and the shipped one) up to six times, and a key made and
 * looked up in the table's map each time was most of the cost (about 0.004 ms of a warm turn, issue 25).
 */
const recent: { table: object; pick: unknown; provider: string; model: string; found: unknown }[] = [];
const RECENT_ANSWERS = 8;

function search<T>(table: Readonly<Prices>, provider: string, model: string, pick: (entry: PriceEntry | undefined) => T | undefined): T | undefined {
  for (const key of [`${provider}/${model}`, model]) {
    const exact = pick(table[key]);
    if (exact !== undefined) return exact;
  }
  for (const [key, entry] of Object.entries(table)) {
    const base = key.startsWith(`${provider}/`) ? key.slice(provider.length + 1) : key.includes('/') ? undefined : key;
    const found = pick(entry);
    if (found !== undefined && base !== undefined && model.startsWith(base) && RELEASE_SUFFIX.test(model.slice(base.length))) return found;
  }
  return undefined;
}

/** The model's entry: service.json's, else the shipped default; undefined when neither knows it. */
export function priceOf(config: Pick<ServiceConfig, 'prices'>, provider: string, model: string): Price | undefined {
  return lookup(config.prices, provider, model, priced) ?? lookup(DEFAULT_PRICES, provider, model, priced);
}

/** The model's context window: service.json's, else the provider's own figure (vscode.lm), else the shipped default. */
export function contextWindowOf(config: Pick<ServiceConfig, 'prices'>, provider: string, model: string, reported?: number): number | null {
  return lookup(config.prices, provider, model, windowed) ?? reported ?? lookup(DEFAULT_PRICES, provider, model, windowed) ?? null;
}

/**
 * The cost of one call in millionths of a dollar (tokens times dollars per million): kept in that unit
 * so that sums stay exact for prices with few decimals; dollars are made only when shown (dollarsOf).
 */
export function microDollarsOf(price: Price, tokens: { input: number; output: number; cached: number; written?: number }): number {
  const cached = Math.min(tokens.cached, tokens.input);
  const written = Math.min(tokens.written ?? 0, tokens.input - cached);
  return (tokens.input - cached - written) * price.input + cached * (price.cached ?? price.input) + written * (price.cache_write ?? price.input) + tokens.output * price.output;
}

/** Millionths of a dollar as dollars, to a billionth (the rest is float noise). */
export function dollarsOf(microDollars: number): number {
  return Math.round(microDollars * 1000) / 1e9;
}
