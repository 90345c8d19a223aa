/**
 * The whole extension activated with the `vscode` double over the real service (temp dirs, loopback)
 * and a fake OpenAI provider, for a test file's tests: each test gets a fresh window (global storage,
 * service.json, the double reset), deactivated and cleaned up after it.
 *
 *   const harness = extensionHarness();
 *   test('...', async () => { const { api } = await harness.activate({ permission_mode: 'ask' }); ... });
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, afterEach, before } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai';
import { TEST_TOKEN } from './service';
import { tempDir } from './temp';
import { fakeContext, installVscodeDouble, testing } from './vscode-double';

type ExtensionModule = typeof import('../../src/extension/extension');

export interface ExtensionHarness {
  readonly fake: FakeOpenAI;
  /** Run after the current test, last added first. */
  readonly cleanups: (() => Promise<unknown>)[];
  /** A window hosting the service: `config` joins service.json's test defaults, `settings` the double's. */
  activate(config?: Record<string, unknown>, settings?: Record<string, unknown>): Promise<{ api: Awaited<ReturnType<ExtensionModule['activate']>>; dataDir: string; port: number }>;
}

export function extensionHarness(): ExtensionHarness {
  installVscodeDouble();
  let ext: ExtensionModule;
  let fake: FakeOpenAI;
  const cleanups: (() => Promise<unknown>)[] = [];
  before(async () => {
    ext = await import('../../src/extension/extension');
    fake = await startFakeOpenAI();
  });
  after(async () => {
    await fake.close();
  });
  afterEach(async () => {
    await ext.deactivate();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return {
    get fake() {
      return fake;
    },
    cleanups,
    async activate(config = {}, settings = {}) {
      testing.reset();
      testing.settings.set('remoteAssistant.port', 0);
      for (const [key, value] of Object.entries(settings)) testing.settings.set(key, value);
      const storage = await tempDir('ra-ext-');
      cleanups.push(storage.cleanup);
      await writeFile(join(storage.dir, 'service.json'), JSON.stringify({ auth_token: TEST_TOKEN, base_url: fake.url, model: 'fake-model', ...config }, null, 2));
      const context = fakeContext(storage.dir);
      cleanups.push(async () => context.subscriptions.forEach((d) => d.dispose()));
      const api = await ext.activate(context as never);
      const state = api.hosting.state;
      assert.equal(state.state, 'hosting', JSON.stringify(state));
      return { api, dataDir: storage.dir, port: (state as { port: number }).port };
    },
  };
}
