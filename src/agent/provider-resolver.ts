import { PROVIDERS, type ServiceConfig } from '../protocol';
import type { ProviderResolver } from './agent';
import type { Host } from './host';
import { PROVIDER_FACTORIES } from './providers/registry';
import type { Provider } from './providers/types';

/**
 * Builds the provider the config names (src/agent/providers/registry.ts), and reuses a keyed one
 * while provider, endpoint and key stay the same (so HTTP connections are kept alive across chats).
 * `secrets`: every secret of the service (the log's redactor holds them), so a provider's error text
 * quoting one does not pass it on.
 */
export function createProviderResolver(host: Host = {}, secrets?: () => Iterable<string>): ProviderResolver {
  let cached: { key: string; provider: Provider } | undefined;
  return (config: ServiceConfig) => {
    const create = PROVIDER_FACTORIES[config.provider];
    // The host's own models are the host's to keep; nothing here to reuse.
    if (!PROVIDERS[config.provider].needsKey) return create({}, host);
    const apiKey = host.apiKey?.(config.provider) ?? config.api_key;
    const key = JSON.stringify([config.provider, config.base_url ?? '', apiKey ?? '']);
    if (cached?.key === key) return cached.provider;
    const provider = create({ apiKey, baseUrl: config.base_url, secrets }, host);
    cached = { key, provider };
    return provider;
  };
}
