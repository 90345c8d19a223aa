import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { startFakeOpenAI } from '../helpers/fake-openai';
import { postJson, startService } from '../helpers/service';
import { useService } from '../helpers/service-fixture';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';

const FAST = { retryBaseMs: 50, retryMaxMs: 500, timeoutMs: 1_000 };

type Row = Record<string, any>;

describe('a daily budget per webhook account', () => {
  let capped: WebhookReceiver;
  let costly: WebhookReceiver;
  let free: WebhookReceiver;

  const svc = useService({
    config: async () => {
      [capped, costly, free] = await Promise.all([startWebhookReceiver(), startWebhookReceiver(), startWebhookReceiver()]);
      return {
        model: 'fake-model',
        prices: { 'fake-model': { input: 1000, output: 1000 } },
        channels: {
          webhook: {
            accounts: {
              capped: { incoming_path: '/hooks/capped', outgoing_url: capped.url('/cb'), budget: { tokens_per_day: 100 } },
              // $1000 per million tokens: 110 tokens cost $0.11.
              costly: { incoming_path: '/hooks/costly', outgoing_url: costly.url('/cb'), budget: { cost_per_day: 0.1 } },
              free: { incoming_path: '/hooks/free', outgoing_url: free.url('/cb') },
            },
          },
        },
      };
    },
    options: { webhook: FAST },
  });
  after(() => Promise.all([capped, costly, free].map((r) => r?.close())));

  async function post(path: string, message: string): Promise<Row> {
    const reply = await postJson(`${svc.httpUrl}${path}`, { message });
    assert.equal(reply.status, 202, reply.text);
    return reply.body!.data as Row;
  }

  const providerCallsWith = (text: string) => svc.fake.requests.filter((r) => JSON.stringify(r.body?.messages ?? []).includes(text)).length;

  for (const [name, limit] of [
    ['capped', 'daily budget of 100 tokens reached'],
    ['costly', 'daily budget of $0.10 reached'],
  ] as const) {
    test(`${name}: once reached, the next message is not run: an error callback says so (budget_exceeded), and so does the accept; another account runs`, async () => {
      const receiver = name === 'capped' ? capped : costly;
      svc.fake.script({ text: 'first answer', usage: { prompt_tokens: 80, completion_tokens: 30 } });
      const first = await post(`/hooks/${name}`, `${name} one`);
      assert.equal(first.budget_exceeded, undefined, 'nothing spent yet');
      await receiver.waitFor((r) => r.requests.length === 1, 'the first reply');
      assert.deepEqual(receiver.requests[0].body, { message: 'first answer', conversation_id: first.conversation_id });

      const second = await post(`/hooks/${name}`, `${name} two`);
      assert.equal(second.budget_exceeded?.code, 'budget_exceeded');
      assert.match(second.budget_exceeded?.error, new RegExp(`${limit.replace('$', '\\$')}; resets at 00:00 UTC`));
      await receiver.waitFor((r) => r.requests.length === 2, 'the error callback');
      assert.deepEqual(receiver.requests[1].body, {
        status: 'error',
        code: 'budget_exceeded',
        error: `${limit}; resets at 00:00 UTC`,
        conversation_id: second.conversation_id,
        message_id: second.message_id,
      });
      assert.equal(providerCallsWith(`${name} two`), 0, 'the run was not started');

      // Another account is not affected.
      const other = await post('/hooks/free', `free after ${name}`);
      assert.equal(other.budget_exceeded, undefined);
      await free.waitFor((r) => r.requests.some((c) => c.body?.conversation_id === other.conversation_id), 'the other account answered');
      assert.equal(providerCallsWith(`free after ${name}`), 1);
    });
  }
});

describe('a message behind an earlier one of its conversation that waits to be retried', () => {
  test('is not refused over the budget before it: it waits, and the two are refused in their order', async () => {
    const receiver = await startWebhookReceiver();
    const fake = await startFakeOpenAI();
    // The first message's retry waits 3 s or more (the inbox's backoff): time for the budget to be used up meanwhile.
    const slow = await startService(
      {
        base_url: fake.url,
        channels: { webhook: { accounts: { capped: { incoming_path: '/hooks/capped', outgoing_url: receiver.url('/cb'), budget: { tokens_per_day: 100 } } } } },
      },
      { webhook: { ...FAST, retryBaseMs: 3_000, retryMaxMs: 6_000 } },
    );
    const post = async (body: Row): Promise<Row> => {
      const reply = await postJson(`${slow.httpUrl}/hooks/capped`, body);
      assert.equal(reply.status, 202, reply.text);
      return reply.body!.data as Row;
    };
    try {
      fake.script({ status: 500 }, { status: 500 }, { status: 500 });
      const first = await post({ message: 'first of the conversation' });
      await fake.waitFor((requests) => requests.length >= 3, 10_000);
      // Another conversation of the account uses up the budget while the first message waits for its retry.
      fake.script({ text: 'costly answer', usage: { prompt_tokens: 80, completion_tokens: 30 } });
      const other = await post({ message: 'another conversation' });
      await receiver.waitFor((r) => r.requests.some((c) => c.body?.conversation_id === other.conversation_id), 'the other reply');
      const second = await post({ message: 'second of the conversation', conversation_id: first.conversation_id });
      assert.equal(second.budget_exceeded?.code, 'budget_exceeded', 'the accept says so');

      const ofConversation = () => receiver.requests.filter((c) => c.body?.conversation_id === first.conversation_id);
      await receiver.waitFor(() => ofConversation().length === 2, 'both error callbacks', 20_000);
      assert.deepEqual(
        ofConversation().map((c) => [(c.body as Row).message_id, (c.body as Row).code]),
        [
          [first.message_id, 'budget_exceeded'],
          [second.message_id, 'budget_exceeded'],
        ],
        'the second waited behind the first, and was refused only after it',
      );
    } finally {
      await slow.dispose();
      await fake.close();
      await receiver.close();
    }
  });
});
