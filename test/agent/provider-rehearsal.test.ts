// The service's warm-up plays one streamed answer through each HTTP provider's SDK (providers/rehearsal.ts)
// so a chat sent one second after start does not pay V8's first compiles of that path (issue 25). The
// canned answer must still parse whole with the SDK in the bundle (else the warm-up fails quietly and the
// first chat pays again), and nothing may leave the process: the rehearsal never uses Node's fetch.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PROVIDER_FACTORIES, providerWarmUp } from '../../src/agent/providers/registry';
import { rehearsal } from '../../src/agent/providers/rehearsal';

for (const name of ['openai', 'anthropic'] as const) {
  test(`${name}: the rehearsal streams its canned answer through the SDK without Node's fetch`, async () => {
    const original = globalThis.fetch;
    let fetched = 0;
    globalThis.fetch = (() => {
      fetched += 1;
      throw new Error('the rehearsal sent a request');
    }) as typeof fetch;
    try {
      const rehearse = rehearsal(name, (settings) => PROVIDER_FACTORIES[name](settings, {}));
      assert.ok(rehearse);
      assert.equal(await rehearse(), 'A warm-up answer.|A warm-up answer.');
    } finally {
      globalThis.fetch = original;
    }
    assert.equal(fetched, 0);
  });

  test(`${name}: the warm-up's steps end with the rehearsal`, async () => {
    const steps = providerWarmUp(name);
    assert.equal(await steps[steps.length - 1](), 'A warm-up answer.|A warm-up answer.');
  });
}

test("the editor's language models have no rehearsal (no SDK to warm)", () => {
  assert.equal(
    rehearsal('vscode', () => assert.fail('not built')),
    undefined,
  );
  assert.deepEqual(providerWarmUp('vscode'), []);
});
