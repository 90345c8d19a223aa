import type { ServiceConfig } from '../protocol';
import type { ProviderResolver } from './agent';
import { createOpenAIProvider } from './providers/openai';
import { ProviderError, type Provider } from './providers/types';

/**
 * Builds the provider the config names, and reuses it while provider, endpoint and key stay the same
 * (so HTTP connections are kept alive across chats).
 */
export function createProviderResolver(apiKeyOf: (config: ServiceConfig) => string | undefined = (c) => c.api_key): ProviderResolver {
  let cached: { key: string; provider: Provider } | undefined;
  return (config) => {
    const apiKey = apiKeyOf(config);
    const key = JSON.stringify([config.provider, config.base_url ?? '', apiKey ?? '']);
    if (cached?.key === key) return cached.provider;
    let provider: Provider;
    switch (config.provider) {
      case 'openai':
        provider = createOpenAIProvider({ apiKey, baseUrl: config.base_url });
        break;
      default: {
        const name = config.provider;
        provider = {
          name,
          complete: async () => {
            throw new ProviderError(name, 'not_configured', `${name}: this provider is not available in this build yet; use "openai" (any OpenAI-compatible base_url)`);
          },
        };
      }
    }
    cached = { key, provider };
    return provider;
  };
}
