import type { ProviderName } from '../../protocol';
import type { Host } from '../host';
import { warmUpFetch } from './fetch-warm-up';
import { cannedProvider, rehearsalProvider, rehearseOverLoopback } from './rehearsal';
import { ProviderError, type Provider } from './types';

/** What a provider is built from: the config's endpoint and the key in force (the host's or service.json's). */
export interface ProviderSettings {
  apiKey?: string;
  baseUrl?: string;
  /** Every secret of the service, kept out of the provider's error messages (src/log/redact.ts). */
  secrets?: () => Iterable<string>;
  /** What the SDK sends with instead of Node's fetch: only the warm-up's rehearsal (rehearsal.ts). */
  fetch?: typeof fetch;
}

export type ProviderFactory = (settings: ProviderSettings, host: Host) => Provider;

// Required when first needed (a turn's provider, or the service's warm-up once listening), not at start:
// the SDKs are the largest part of the bundle, and the build puts them in files of their own
// (esbuild.mjs), which a start neither parses nor runs.
const openai = () => require('./openai') as typeof import('./openai');
const anthropic = () => require('./anthropic') as typeof import('./anthropic');
const SDK_MODULES: Partial<Record<ProviderName, () => unknown>> = { openai, anthropic };

/**
 * What loads a provider's module and SDK ahead of its first turn, so that turn is not the slower one:
 * steps the service's warm-up runs one per turn of the event loop. The SDKs send with Node's fetch:
 * a Headers made here loads its implementation (undici), a first request builds the rest (warmUpFetch);
 * then one streamed answer is played through the SDK and Node's fetch to a loopback server of the
 * warm-up's own (rehearseOverLoopback), a step of a few milliseconds: the practice turn after it (Service.practise) gets to its provider call only after
 * its scratch store is made, and on a loaded machine a chat often came first and stopped it.
 */
export function providerWarmUp(name: ProviderName, ended?: AbortSignal): (() => unknown)[] {
  const load = SDK_MODULES[name];
  // The answer as streamed and as assembled (the test checks the canned format still parses whole).
  const rehearse = () => rehearseOverLoopback(name, (settings) => PROVIDER_FACTORIES[name](settings, NO_HOST), ended);
  return load ? [load, () => new Headers(), () => warmUpFetch(ended), rehearse] : [];
}

/**
 * The provider of the warm-up's practice turn: `name`'s own, built by its factory with a canned fetch
 * (rehearsal.ts: nothing is sent, no key used), or, for a provider without an HTTP SDK, a canned one.
 */
export function practiceProvider(name: ProviderName): Provider {
  // Without a local server's window: its probes would go out with Node's fetch (the real provider asked
  // them in the warm-up: Agent.warmUpProvider).
  const { contextWindow: _window, warmUp: _warmUp, ...provider } = rehearsalProvider(name, (settings) => PROVIDER_FACTORIES[name](settings, NO_HOST)) ?? cannedProvider(name);
  return provider;
}

/** The practice's SDK providers never ask the host for anything. */
const NO_HOST: Host = {};

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
  openai: (settings) => openai().createOpenAIProvider(settings),
  anthropic: (settings) => anthropic().createAnthropicProvider(settings),
  vscode: (_settings, host) => host.languageModels?.() ?? unavailable('vscode', "the editor's language models are only available when the service runs inside VS Code"),
};
