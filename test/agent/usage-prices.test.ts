import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contextWindowOf, DEFAULT_PRICES, priceOf } from '../../src/agent/usage/prices';

const none = { prices: {} };

test('shipped defaults: a model, and its dated or -latest releases; never another model that shares the prefix', () => {
  assert.equal(priceOf(none, 'openai', 'gpt-4o'), DEFAULT_PRICES['openai/gpt-4o']);
  assert.equal(priceOf(none, 'openai', 'gpt-4o-2024-08-06'), DEFAULT_PRICES['openai/gpt-4o']);
  assert.equal(priceOf(none, 'openai', 'gpt-4o-mini'), DEFAULT_PRICES['openai/gpt-4o-mini']);
  assert.equal(priceOf(none, 'anthropic', 'claude-sonnet-4-5-20250929'), DEFAULT_PRICES['anthropic/claude-sonnet-4-5']);
  assert.equal(priceOf(none, 'anthropic', 'claude-3-5-haiku-latest'), DEFAULT_PRICES['anthropic/claude-3-5-haiku']);
  assert.equal(priceOf(none, 'openai', 'gpt-4o-audio-preview'), undefined, 'another model: no price rather than a guess');
  assert.equal(priceOf(none, 'anthropic', 'gpt-4o'), undefined, "a default is the provider's own");
  assert.equal(priceOf(none, 'vscode', 'copilot-gpt-4o'), undefined);
});

test('service.json prices override the defaults, by provider/model first, then by model', () => {
  const own = { input: 1, output: 2 };
  const byModel = { input: 3, output: 4, context_window: 1000 };
  const config = { prices: { 'openai/gpt-4o': own, 'my-local-model': byModel } };
  assert.equal(priceOf(config, 'openai', 'gpt-4o'), own);
  assert.equal(priceOf(config, 'openai', 'gpt-4o-2024-08-06'), own);
  assert.equal(priceOf(config, 'anthropic', 'my-local-model'), byModel);
  assert.equal(contextWindowOf(config, 'openai', 'my-local-model', 5000), 1000, "service.json's window beats the provider's");
  assert.equal(contextWindowOf(none, 'vscode', 'x', 5000), 5000);
  assert.equal(contextWindowOf(none, 'openai', 'gpt-4o'), 128_000);
  assert.equal(contextWindowOf(none, 'openai', 'unknown'), null);
});

test("an entry of only a context_window sizes the model's window and leaves its price to the defaults (or unknown)", () => {
  const config = { prices: { 'openai/llama3.1': { context_window: 8192 }, 'openai/gpt-4o': { context_window: 64_000 } } };
  assert.equal(contextWindowOf(config, 'openai', 'llama3.1'), 8192);
  assert.equal(priceOf(config, 'openai', 'llama3.1'), undefined, 'no price: cost unknown, never 0');
  assert.equal(contextWindowOf(config, 'openai', 'gpt-4o'), 64_000);
  assert.equal(priceOf(config, 'openai', 'gpt-4o'), DEFAULT_PRICES['openai/gpt-4o'], 'the shipped price stays');
});

test('answers kept for a frozen table (a loaded service.json) are its own: a new table, or one that can still change, is asked afresh', () => {
  const frozen = (prices: Record<string, object>) => ({ prices: Object.freeze(Object.fromEntries(Object.entries(prices).map(([k, v]) => [k, Object.freeze(v)]))) });
  const before = frozen({ 'local/llama3.1': { input: 1, output: 2, context_window: 8192 } });
  assert.deepEqual(priceOf(before, 'local', 'llama3.1'), { input: 1, output: 2, context_window: 8192 });
  assert.equal(contextWindowOf(before, 'local', 'llama3.1'), 8192);
  assert.equal(priceOf(before, 'local', 'other'), undefined);
  // The config reloaded with other figures: a new frozen table.
  const after = frozen({ 'local/llama3.1': { input: 5, output: 6, context_window: 4096 }, 'local/other': { context_window: 1000 } });
  assert.deepEqual(priceOf(after, 'local', 'llama3.1'), { input: 5, output: 6, context_window: 4096 });
  assert.equal(contextWindowOf(after, 'local', 'llama3.1'), 4096);
  assert.equal(contextWindowOf(after, 'local', 'other'), 1000);
  assert.equal(contextWindowOf(before, 'local', 'llama3.1'), 8192, "the old table's answer is its own");
  // A table that is not frozen (or whose entries are not) is not kept: changed in place, it answers anew.
  const open = { prices: { 'local/m': { input: 1, output: 1 } } as Record<string, { input: number; output: number }> };
  assert.equal(priceOf(open, 'local', 'm')?.input, 1);
  open.prices['local/m'] = { input: 9, output: 9 };
  assert.equal(priceOf(open, 'local', 'm')?.input, 9);
  const shallow = { prices: Object.freeze({ 'local/m': { context_window: 100 } }) };
  assert.equal(contextWindowOf(shallow, 'local', 'm'), 100);
  shallow.prices['local/m'].context_window = 200;
  assert.equal(contextWindowOf(shallow, 'local', 'm'), 200);
  assert.ok(Object.isFrozen(DEFAULT_PRICES));
});

test('the last answers looked at first are each their own table, question, provider and model', () => {
  const frozen = (prices: Record<string, object>) => ({ prices: Object.freeze(Object.fromEntries(Object.entries(prices).map(([k, v]) => [k, Object.freeze(v)]))) });
  const one = frozen({ 'p/a': { input: 1, output: 1, context_window: 100 }, 'p/b': { input: 2, output: 2, context_window: 200 }, 'q/a': { input: 3, output: 3, context_window: 300 } });
  const two = frozen({ 'p/a': { input: 4, output: 4, context_window: 400 } });
  for (let round = 0; round < 2; round++) {
    assert.equal(contextWindowOf(one, 'p', 'a'), 100);
    assert.equal(priceOf(one, 'p', 'a')?.input, 1, 'the price, not the window asked just before');
    assert.equal(contextWindowOf(one, 'p', 'b'), 200, 'another model');
    assert.equal(contextWindowOf(one, 'q', 'a'), 300, 'another provider');
    assert.equal(contextWindowOf(two, 'p', 'a'), 400, 'another table');
    assert.equal(priceOf(two, 'p', 'a')?.input, 4);
  }
});
