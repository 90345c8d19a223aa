import type { ServiceConfig } from '../protocol';
import type { ProviderResolver } from './agent';
import type { Host } from './host';
import { createAnthropicProvider } from './providers/anthropic';
import { createOpenAIProvider } from './providers/openai';
import { ProviderError, type Provider } from './providers/types';

function unavailable(name: string, why: string): Provider {
  return {
    name,
    complete: async () => {
      throw new ProviderError(name, 'not_configured', `${name}: ${why}`);
    },
  };
}

/**
 * Builds the provider the config names, and reuses it while provider, endpoint and key stay the same
 * (so HTTP connections are kept alive across chats).
 */
export function createProviderResolver(host: Host = {}): ProviderResolver {
  let cached: { key: string; provider: Provider } | undefined;
  return (config: ServiceConfig) => {
    if (config.provider === 'vscode') {
      return host.languageModels?.() ?? unavailable('vscode', "the editor's language models are only available when the service runs inside VS Code");
    }
    const apiKey = host.apiKey?.(config.provider) ?? config.api_key;
    const key = JSON.stringify([config.provider, config.base_url ?? '', apiKey ?? '']);
    if (cached?.key === key) return cached.provider;
    const options = { apiKey, baseUrl: config.base_url };
    const provider = config.provider === 'anthropic' ? createAnthropicProvider(options) : createOpenAIProvider(options);
    cached = { key, provider };
    return provider;
  };
}
