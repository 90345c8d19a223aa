/**
 * The one list of providers. Every place that names providers reads it: the config schema
 * (`ProviderName`), the agent's resolver (its factories, src/agent/providers/registry.ts, are typed by
 * it so a provider without a factory fails `tsc`), and the editor's pickers and key storage.
 * Browser-safe: names and labels only, no code of the providers.
 */

export interface ProviderInfo {
  /** Shown in the editor's provider picker. */
  label: string;
  /** Needs an API key (from service.json or the editor's secret storage) to be used. */
  needsKey: boolean;
  /** The endpoint used when `base_url` is not set. */
  defaultBaseUrl?: string;
}

export const PROVIDERS = {
  openai: { label: 'OpenAI or any OpenAI-compatible endpoint (base_url)', needsKey: true, defaultBaseUrl: 'https://api.openai.com/v1' },
  anthropic: { label: 'Anthropic', needsKey: true, defaultBaseUrl: 'https://api.anthropic.com' },
  vscode: { label: "The editor's language models (vscode.lm)", needsKey: false },
} as const satisfies Record<string, ProviderInfo>;

type Name = keyof typeof PROVIDERS;

/** Every provider's name, in the pickers' order. */
export const PROVIDER_NAMES = Object.keys(PROVIDERS) as [Name, ...Name[]];

/** The provider of a new service.json. */
export const DEFAULT_PROVIDER: Name = 'openai';

/** The providers that take an API key, in the pickers' order. */
export const KEYED_PROVIDERS: Name[] = PROVIDER_NAMES.filter((name) => PROVIDERS[name].needsKey);

export function isProviderName(value: unknown): value is Name {
  return typeof value === 'string' && Object.hasOwn(PROVIDERS, value);
}
