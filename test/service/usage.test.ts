import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, ConfigFile } from '../../src/config/config-file';
import { writeConfig, type RunningService } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

// Dollars per million tokens, chosen so that every cost below is a whole number of millionths of a dollar.
const PRICES = {
  'openai/fake-model': { input: 2, output: 8, cached: 0.5, context_window: 8000 },
  'claude-fake-2': { input: 3, output: 15, cached: 0.3, cache_write: 3.75 },
};
/** Dollars, to a billionth (as the protocol gives them). */
const cost = (price: { input: number; output: number; cached: number; cache_write?: number }, input: number, output: number, cached: number, written = 0) =>
  Math.round(((input - cached - written) * price.input + cached * price.cached + written * (price.cache_write ?? price.input) + output * price.output) * 1000) / 1e9;

type Row = Record<string, any>;

async function withClient<T>(svc: RunningService, run: (client: TestClient) => Promise<T>): Promise<T> {
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    return await run(client);
  } finally {
    client.close();
  }
}

async function ask(client: TestClient, frame: Row): Promise<Row> {
  const reply = await client.request(frame);
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  return reply.data as Row;
}

async function lastReply(client: TestClient, conversationId: string): Promise<Row> {
  const { messages } = await ask(client, { type: 'get_messages', conversation_id: conversationId });
  const reply = (messages as Row[]).at(-1)!;
  assert.equal(reply.role, 'assistant');
  return reply;
}

describe('usage and cost (OpenAI format)', () => {
  const svc = useService({ config: { model: 'fake-model', prices: PRICES } });

  for (const stream of [true, false]) {
    test(`${stream ? 'streamed' : 'not streamed'}: the reply carries the provider's figures, cached tokens and the cost from the price table`, () =>
      withClient(svc, async (client) => {
        svc.fake.script({ text: 'hello', usage: { prompt_tokens: 1000, completion_tokens: 200, prompt_tokens_details: { cached_tokens: 400 } } });
        const { conversation_id } = await ask(client, { type: 'chat', message: 'hi', stream });
        const reply = await lastReply(client, conversation_id);
        assert.deepEqual(reply.usage, {
          provider: 'openai',
          model: 'fake-model',
          input_tokens: 1000,
          output_tokens: 200,
          cached_tokens: 400,
          cost: cost(PRICES['openai/fake-model'], 1000, 200, 400),
          estimated: false,
          calls: 1,
          context_used: 1000,
          context_window: 8000,
        });
        if (stream) assert.deepEqual(svc.fake.requests.at(-1)!.body.stream_options, { include_usage: true });
      }));
  }

  test('a tool round trip sums both provider calls; the context is that of the last call', () =>
    withClient(svc, async (client) => {
      svc.fake.script(
        { tool_calls: [{ name: 'no_such_tool', arguments: {} }], usage: { prompt_tokens: 100, completion_tokens: 10 } },
        { text: 'done', usage: { prompt_tokens: 150, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 100 } } },
      );
      const { conversation_id } = await ask(client, { type: 'chat', message: 'use a tool' });
      const { usage } = await lastReply(client, conversation_id);
      assert.equal(usage.calls, 2);
      assert.equal(usage.input_tokens, 250);
      assert.equal(usage.output_tokens, 30);
      assert.equal(usage.cached_tokens, 100);
      assert.equal(usage.cost, cost(PRICES['openai/fake-model'], 250, 30, 100));
      assert.equal(usage.context_used, 150);
    }));

  test('conversation totals on list_conversations and per day and model on get_usage; an unknown price is null', () =>
    withClient(svc, async (client) => {
      const before = await ask(client, { type: 'get_usage', days: 1 });
      const today = new Date().toISOString().slice(0, 10);
      const earlier = (before.days as Row[]).find((d) => d.day === today);

      svc.fake.script({ text: 'one', usage: { prompt_tokens: 500, completion_tokens: 50 } }, { text: 'two', usage: { prompt_tokens: 700, completion_tokens: 70 } });
      const { conversation_id } = await ask(client, { type: 'chat', message: 'first' });
      await ask(client, { type: 'chat', message: 'second', conversation_id });
      const { conversations } = await ask(client, { type: 'list_conversations' });
      const row = (conversations as Row[]).find((c) => c.id === conversation_id)!;
      assert.deepEqual(row.usage, {
        input_tokens: 1200,
        output_tokens: 120,
        cached_tokens: 0,
        cost: cost(PRICES['openai/fake-model'], 1200, 120, 0),
        estimated: false,
        replies: 2,
        context_used: 700,
        context_window: 8000,
      });

      // A model without a price: its cost is unknown ("—"), and so is the day's.
      await ask(client, { type: 'update_config', config: { model: 'fake-model-large' } });
      svc.fake.script({ text: 'three', usage: { prompt_tokens: 40, completion_tokens: 4 } });
      const other = await ask(client, { type: 'chat', message: 'third' });
      await ask(client, { type: 'update_config', config: { model: 'fake-model' } });
      const unpriced = await lastReply(client, other.conversation_id);
      assert.equal(unpriced.usage.cost, null);
      assert.equal(unpriced.usage.context_window, null);

      const { days } = await ask(client, { type: 'get_usage', days: 1 });
      const day = (days as Row[]).find((d) => d.day === today)!;
      const models = Object.fromEntries((day.models as Row[]).map((m) => [m.model, m]));
      const priorTokens = (model: string) => (earlier?.models as Row[] | undefined)?.find((m) => m.model === model) ?? { input_tokens: 0, output_tokens: 0, replies: 0, cost: 0 };
      assert.equal(models['fake-model'].input_tokens - priorTokens('fake-model').input_tokens, 1200);
      assert.equal(models['fake-model'].output_tokens - priorTokens('fake-model').output_tokens, 120);
      assert.equal(models['fake-model'].replies - priorTokens('fake-model').replies, 2);
      assert.equal(Math.round((models['fake-model'].cost - priorTokens('fake-model').cost) * 1e9), Math.round(cost(PRICES['openai/fake-model'], 1200, 120, 0) * 1e9));
      assert.equal(models['fake-model-large'].cost, null);
      assert.equal(day.cost, null, 'a day with an unpriced reply has no total cost');
      assert.equal(
        day.input_tokens,
        (day.models as Row[]).reduce((n, m) => n + m.input_tokens, 0),
      );
    }));

  test('a turn cancelled after a tool round keeps the tokens it spent, under its user message', () =>
    withClient(svc, async (client) => {
      const calls = svc.fake.requests.length;
      svc.fake.script({ tool_calls: [{ name: 'no_such_tool', arguments: {} }], usage: { prompt_tokens: 100, completion_tokens: 10 } }, { text: 'never', hangAfterChunks: 0 });
      client.send({ type: 'chat', message: 'cancel me', id: 'to-cancel', stream: true });
      while (svc.fake.requests.length < calls + 2) await new Promise((resolve) => setTimeout(resolve, 20));
      const answer = client.next((f) => f.id === 'to-cancel' && 'status' in f && 'response' in (f.data as object));
      client.send({ type: 'cancel', id: 'to-cancel' });
      const { data } = (await answer) as Row;
      assert.equal(data.cancelled, true);
      const { messages } = await ask(client, { type: 'get_messages', conversation_id: data.conversation_id });
      const [user] = messages as Row[];
      assert.equal(user.role, 'user');
      assert.equal(user.usage.input_tokens, 100);
      assert.equal(user.usage.calls, 1);
      assert.equal((messages as Row[]).length, 1, 'no reply stored');
    }));

  test('chat.message of a reply carries its usage, so a page shows it live', () =>
    withClient(svc, async (client) => {
      svc.fake.script({ text: 'live', usage: { prompt_tokens: 30, completion_tokens: 3 } });
      const reply = client.next((f) => f.event === 'chat.message' && (f as Row).message.role === 'assistant');
      await ask(client, { type: 'chat', message: 'watch' });
      const event = (await reply) as Row;
      assert.equal(event.message.usage.input_tokens, 30);
      assert.equal(event.message.usage.output_tokens, 3);
    }));

  test('a server that reports no usage: no figures are made up (no usage rather than zeros)', () =>
    withClient(svc, async (client) => {
      svc.fake.script({ text: 'no figures', usage: null });
      const { conversation_id } = await ask(client, { type: 'chat', message: 'quiet server', stream: true });
      const reply = await lastReply(client, conversation_id);
      assert.equal(reply.content, 'no figures');
      assert.equal(reply.usage, undefined);
      const { conversations } = await ask(client, { type: 'list_conversations' });
      assert.equal((conversations as Row[]).find((c) => c.id === conversation_id)!.usage, null);
    }));

  test('get_usage: days outside 1..366 is invalid_request', () =>
    withClient(svc, async (client) => {
      for (const days of [0, 367, 1.5, 'x']) {
        const reply = await client.request({ type: 'get_usage', days });
        assert.equal(reply.status, 'error');
        assert.equal((reply as Row).code, 'invalid_request');
      }
    }));
});

describe('usage and cost (Anthropic format)', () => {
  const svc = useService({ provider: 'anthropic', config: { model: 'claude-fake-2', prices: PRICES } });

  for (const stream of [true, false]) {
    test(`${stream ? 'streamed (message_start + message_delta)' : 'not streamed'}: input counts cache reads and writes, each at its own price`, () =>
      withClient(svc, async (client) => {
        svc.fake.script({ text: 'bonjour', usage: { input_tokens: 300, output_tokens: 50, cache_read_input_tokens: 100, cache_creation_input_tokens: 40 } });
        const { conversation_id } = await ask(client, { type: 'chat', message: 'salut', stream });
        const { usage } = await lastReply(client, conversation_id);
        assert.equal(usage.provider, 'anthropic');
        assert.equal(usage.input_tokens, 440);
        assert.equal(usage.output_tokens, 50);
        assert.equal(usage.cached_tokens, 100);
        assert.equal(usage.cost, cost(PRICES['claude-fake-2'], 440, 50, 100, 40));
        assert.equal(usage.context_used, 440);
      }));
  }
});

/** The problems ConfigFile names for service.json with these settings (it must refuse the file). */
async function problemsOf(config: Record<string, unknown>): Promise<string[]> {
  const temp = await tempDir('ra-usage-config-');
  try {
    await writeConfig(temp.dir, config);
    const error = await ConfigFile.load(temp.dir).then(
      () => assert.fail(`expected a ConfigError for ${JSON.stringify(config)}`),
      (e: unknown) => e,
    );
    assert.ok(error instanceof ConfigError);
    return error.problems;
  } finally {
    await temp.cleanup();
  }
}

async function assertRefused(config: Record<string, unknown>, field: string): Promise<void> {
  const problems = await problemsOf(config);
  assert.ok(
    problems.some((p) => p.startsWith(`${field}:`)),
    `${field} not named in ${problems.join('; ')}`,
  );
}

describe('usage settings in service.json', () => {
  test('a bad price entry is refused, naming the field', async () => {
    for (const [prices, field] of [
      [{ 'openai/x': { input: -1, output: 1 } }, 'prices.openai/x.input'],
      [{ 'openai/x': { input: 1 } }, 'prices.openai/x.output'],
      [{ 'openai/x': { input: 1, output: 1, extra: 2 } }, 'prices.openai/x.extra'],
      [{ 'openai/x': { input: '1', output: 1 } }, 'prices.openai/x.input'],
      [{ 'openai/x': { input: 1, output: 1, context_window: 0 } }, 'prices.openai/x.context_window'],
      [{ 'openai/x': { input: 1, output: 1, cache_write: -2 } }, 'prices.openai/x.cache_write'],
      [[1], 'prices'],
    ] as const) {
      await assertRefused({ prices }, field);
    }
  });

  test("a webhook account's budget without tokens_per_day or cost_per_day, or with a bad figure, is refused naming it", async () => {
    for (const [budget, field] of [
      [{}, 'channels.webhook.accounts.a.budget'],
      [{ tokens_per_day: -5 }, 'channels.webhook.accounts.a.budget.tokens_per_day'],
      [{ cost_per_day: 'x' }, 'channels.webhook.accounts.a.budget.cost_per_day'],
    ] as const) {
      await assertRefused({ channels: { webhook: { accounts: { a: { incoming_path: '/a', outgoing_url: 'http://127.0.0.1:1/cb', budget } } } } }, field);
    }
  });
});
