// The service thread's side of the editor's language models (src/service-thread/host-calls.ts): a
// completion asked with a signal already aborted (a cancel that lands just before the provider is asked)
// must fail as the editor's provider fails in process, a ProviderError of kind 'cancelled' (the agent
// tells a cancelled turn from a failed one by it: agent.ts), and nothing is asked of the editor.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProviderError } from '../../src/agent/providers/types';
import { HostCalls } from '../../src/service-thread/host-calls';
import type { FromThread } from '../../src/service-thread/wire';

test("a completion whose signal is already aborted fails as 'cancelled', as the editor's provider does in process; nothing crosses", async () => {
  const posted: FromThread[] = [];
  const calls = new HostCalls({ dataDir: '/nowhere', toolSources: [], laterToolSources: [], languageModels: true, terminal: false, mirrors: { apiKeys: [] } }, (m) => posted.push(m));
  const provider = calls.host.languageModels!()!;
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(
    provider.complete({ model: 'm', messages: [{ role: 'user', content: 'hi' }], signal: controller.signal }),
    (error: unknown) => error instanceof ProviderError && error.kind === 'cancelled',
  );
  assert.deepEqual(posted, []);
});
