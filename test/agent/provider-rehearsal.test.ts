// The service's warm-up plays a practice turn (Agent.practiceTwin) through each HTTP provider's SDK with a
// canned fetch (providers/rehearsal.ts), so a chat sent one second after start does not pay V8's first
// compiles of that path (issue 25). The canned answer must still parse whole with the SDK in the bundle
// (else the practice fails quietly and the first chat pays again), and nothing may leave the process:
// the practice's provider never uses Node's fetch, not even for a local server's window; the warm-up's
// rehearsal sends with it only to a loopback server of its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { practiceProvider, providerWarmUp } from '../../src/agent/providers/registry';
import { PRACTICE_ANSWER } from '../../src/agent/providers/rehearsal';

for (const name of ['openai', 'anthropic', 'vscode'] as const) {
  test(`${name}: the practice's provider streams its canned answer without Node's fetch`, async () => {
    const original = globalThis.fetch;
    let fetched = 0;
    globalThis.fetch = (() => {
      fetched += 1;
      throw new Error('the practice sent a request');
    }) as typeof fetch;
    try {
      const provider = practiceProvider(name);
      assert.equal(provider.contextWindow, undefined);
      const pieces: string[] = [];
      const { text } = await provider.complete({ model: 'rehearsal', messages: [{ role: 'user', content: 'warm up' }], max_tokens: 16, onDelta: (piece) => pieces.push(piece) });
      assert.equal(PRACTICE_ANSWER, 'A warm-up answer.');
      assert.equal(text, PRACTICE_ANSWER);
      assert.equal(pieces.join(''), PRACTICE_ANSWER);
    } finally {
      globalThis.fetch = original;
    }
    assert.equal(fetched, 0);
  });
}

for (const name of ['openai', 'anthropic'] as const) {
  test(`${name}: the warm-up's provider steps end with a streamed answer through the SDK, sent with Node's fetch to a loopback server of its own`, async () => {
    // The first chat's request runs Node's fetch with the SDK's headers and body (undici's checks of
    // each header, the body's copy, the response's byte stream): the rehearsal sends the same, to a
    // server of the warm-up's own on 127.0.0.1 that answers the canned stream, and closes it.
    const original = globalThis.fetch;
    const sent: string[] = [];
    globalThis.fetch = ((input: string | URL | Request, init?: RequestInit) => {
      sent.push(`${init?.method ?? 'GET'} ${input instanceof Request ? input.url : String(input)}`);
      return original(input, init);
    }) as typeof fetch;
    try {
      const steps = providerWarmUp(name);
      assert.equal(await steps[steps.length - 1](), 'A warm-up answer.|A warm-up answer.');
    } finally {
      globalThis.fetch = original;
    }
    assert.equal(sent.length, 1, sent.join(', '));
    assert.match(sent[0], /^POST http:\/\/127\.0\.0\.1:\d+\//);
    // Its server is closed: the port refuses.
    const port = Number(/:(\d+)\//.exec(sent[0])![1]);
    await assert.rejects(original(`http://127.0.0.1:${port}/`));
  });
}

test("the editor's language models have no SDK to load ahead", () => {
  assert.deepEqual(providerWarmUp('vscode'), []);
});

test('the end of the warm-up (stop, a first turn) closes its loopback server at once, even while its answer is still awaited', async () => {
  // Review of s12/chat12: stop() returned with the rehearsal's server still listening (its answer slow on
  // a loaded machine; bounded only by the SDK's own retries, minutes), in the editor's extension host.
  const { onLoopback } = await import('../../src/agent/providers/fetch-warm-up');
  const ended = new AbortController();
  let origin = '';
  let settle: (() => void) | undefined;
  const using = onLoopback(['late'], 'text/plain', (at) => ((origin = at), new Promise<void>((resolve) => (settle = resolve))), ended.signal);
  using.catch(() => undefined);
  while (origin === '') await new Promise((resolve) => setTimeout(resolve, 5));
  ended.abort();
  await assert.rejects(using, 'the step ends with the warm-up');
  await assert.rejects(fetch(`${origin}/`), 'nothing listens on its port any more');
  settle?.();
});
