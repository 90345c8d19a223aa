// The provider registry (src/protocol/providers.ts) is the only list of providers: the config schema,
// the agent's factories and the editor's pickers and key storage must all follow it, so adding a
// provider in one place but not the others fails here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createProviderResolver } from '../../src/agent/provider-resolver';
import { PROVIDER_FACTORIES } from '../../src/agent/providers/registry';
import type { Provider } from '../../src/agent/providers/types';
import { DEFAULT_PROVIDER, KEYED_PROVIDERS, PROVIDER_NAMES, PROVIDERS, ProviderName, ServiceConfigFile, WritableConfig } from '../../src/protocol';
import { fakeContext, installVscodeDouble, testing } from '../helpers/vscode-double';

installVscodeDouble();

const editorModels: Provider = {
  name: 'vscode',
  complete: async () => {
    throw new Error('not called: only resolved');
  },
};

test('the config schema accepts exactly the registered providers', () => {
  assert.deepEqual([...ProviderName.options], PROVIDER_NAMES);
  for (const name of PROVIDER_NAMES) {
    assert.equal(ServiceConfigFile.parse({ provider: name }).provider, name);
    assert.ok(WritableConfig.safeParse({ provider: name }).success, name);
  }
  assert.equal(WritableConfig.safeParse({ provider: 'not-a-provider' }).success, false);
  assert.equal(ServiceConfigFile.parse({}).provider, DEFAULT_PROVIDER);
});

test('every registered provider has a label, a factory, and resolves to a provider of its name', () => {
  assert.deepEqual(Object.keys(PROVIDER_FACTORIES).sort(), [...PROVIDER_NAMES].sort());
  const resolve = createProviderResolver({ languageModels: () => editorModels, apiKey: () => 'sk-test-key-0123456789' });
  for (const name of PROVIDER_NAMES) {
    assert.ok(PROVIDERS[name].label.trim(), `${name} has a label`);
    const provider = resolve(ServiceConfigFile.parse({ provider: name }));
    assert.equal(provider.name, name);
  }
  assert.deepEqual(
    KEYED_PROVIDERS,
    PROVIDER_NAMES.filter((name) => PROVIDERS[name].needsKey),
  );
});

test('a keyed provider is reused while its settings stay; the editor models are asked for each time', () => {
  let asked = 0;
  const resolve = createProviderResolver({ languageModels: () => (asked++, editorModels) });
  for (const name of KEYED_PROVIDERS) {
    const config = ServiceConfigFile.parse({ provider: name, api_key: 'sk-test-key-0123456789' });
    assert.equal(resolve(config), resolve(config), `${name} is reused`);
    assert.notEqual(resolve({ ...config, api_key: 'sk-other-key-0123456789' }), resolve(config), `${name} follows its key`);
  }
  const vscode = ServiceConfigFile.parse({ provider: 'vscode' });
  resolve(vscode);
  resolve(vscode);
  assert.equal(asked, 2);
  const headless = createProviderResolver({})(vscode);
  assert.equal(headless.name, 'vscode', 'without the editor, a provider that explains itself');
});

test("the editor's provider picker, key picker and key storage list the registered providers", async () => {
  const { PROVIDER_ITEMS, setApiKey } = await import('../../src/extension/palette-commands');
  const { ApiKeys } = await import('../../src/extension/api-keys');
  assert.deepEqual(
    PROVIDER_ITEMS.map((item) => item.label),
    PROVIDER_NAMES,
  );
  assert.deepEqual(
    PROVIDER_ITEMS.map((item) => item.description),
    PROVIDER_NAMES.map((name) => PROVIDERS[name].label),
  );

  testing.reset();
  const context = fakeContext('/nonexistent');
  for (const name of KEYED_PROVIDERS) await context.secrets.store(`remoteAssistant.apiKey.${name}`, `key-of-${name}-0123456789`);
  const apiKeys = new ApiKeys(context.secrets as never);
  await apiKeys.loadAll();
  for (const name of KEYED_PROVIDERS) assert.equal(apiKeys.get(name), `key-of-${name}-0123456789`);
  assert.deepEqual(apiKeys.values().sort(), KEYED_PROVIDERS.map((name) => `key-of-${name}-0123456789`).sort());

  testing.answers.quickPick.push(() => undefined);
  await setApiKey({ hosting: { backend: undefined }, apiKeys } as never);
  assert.deepEqual(testing.quickPicks.at(-1)!.items, KEYED_PROVIDERS);
  apiKeys.dispose();
});
