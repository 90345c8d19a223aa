import type { ProviderName } from '../../protocol';
import type { Host } from '../host';
import { createAnthropicProvider } from './anthropic';
import { createOpenAIProvider } from './openai';
import { ProviderError, type Provider } from './types';

/** What a provider is built from: the config's endpoint and the key in force (the host's or service.json's). */
export interface ProviderSettings {
  apiKey?: string;
  baseUrl?: string;
  /** Every secret of the service, kept out of the provider's error messages (src/log/redact.ts). */
  secrets?: () => Iterable<string>;
}

export type ProviderFactory = (settings: ProviderSettings, host: Host) => Provider;

function unavailable(name: ProviderName, why: string): Provider {
  return {
    name,
    complete: async () => {
      throw new ProviderError(name, 'not_configured', `${name}: ${why}`);
    },
  };
}

/**
 * How each registered provider is built. Keyed by every name of the registry (src/protocol/providers.ts),
 * so a provider added there without a factory here fails `tsc`.
 */
export const PROVIDER_FACTORIES: Record<ProviderName, ProviderFactory> = {
  openai: (settings) => createOpenAIProvider(settings),
  anthropic: (settings) => createAnthropicProvider(settings),
  vscode: (_settings, host) =>
    host.languageModels?.() ?? unavailable('vscode', "the editor's language models are only available when the service runs inside VS Code"),
};
