// Issue 22, "Shows its plan": the model's `todo` calls through a real chat reach a second client following
// the conversation (plan.updated, replayed on catch-up), get_plan answers the latest plan, the list row
// collapses it ("done of total"), it survives a restart, and it runs without a prompt even in `ask` mode.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startService, type RunningService } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

type Frame = Record<string, unknown>;

let fake: FakeOpenAI;
let data: { dir: string; cleanup: () => Promise<void> };
let workspace: { dir: string; cleanup: () => Promise<void> };
let svc: RunningService;

const config = () => ({ base_url: fake.url, permission_mode: 'ask', workspace: workspace.dir });

before(async () => {
  fake = await startFakeOpenAI();
  data = await tempDir('ra-todo-data-');
  workspace = await tempDir('ra-todo-ws-');
  svc = await startService(config(), { dataDir: data.dir });
});
after(async () => {
  await svc?.stop();
  await fake?.close();
  await data?.cleanup();
  await workspace?.cleanup();
});

/** The client's frames matching `match`, once there are `count` of them. */
function received(client: TestClient, match: (f: Frame) => boolean, count = 1): Promise<Frame[]> {
  return waitFor(
    () => {
      const found = client.frames.filter(match);
      return found.length >= count ? found : undefined;
    },
    `${count} matching frames`,
    10_000,
  );
}

const FIRST = [
  { text: 'Read the code', status: 'in_progress' },
  { text: 'Fix the bug', status: 'pending' },
  { text: 'Run the tests', status: 'pending' },
];
const SECOND = [
  { text: 'Read the code', status: 'done' },
  { text: 'Fix the bug', status: 'done' },
  { text: 'Run the tests', status: 'in_progress' },
];

test('two todo calls in a chat: a follower gets plan.updated twice, get_plan and the list row give the latest, a restart keeps it', async () => {
  const sender = await TestClient.authed(svc.wsUrl, svc.token);
  const follower = await TestClient.authed(svc.wsUrl, svc.token);
  let id: string;
  try {
    const first = await sender.request({ type: 'chat', message: 'hello' });
    assert.equal(first.status, 'ok', JSON.stringify(first));
    id = (first.data as { conversation_id: string }).conversation_id;
    const followed = await follower.request({ type: 'follow_conversation', conversation_id: id });
    assert.equal(followed.status, 'ok', JSON.stringify(followed));
    const followedAt = (followed.data as { seq: number }).seq;

    fake.script({ tool_calls: [{ name: 'todo', arguments: { items: FIRST } }] }, { tool_calls: [{ name: 'todo', arguments: { items: SECOND } }] }, { text: 'two of three done' });
    // permission_mode is `ask` and nobody answers: the turn ends only because todo needs no prompt.
    const chat = await sender.request({ type: 'chat', message: 'fix the bug', conversation_id: id });
    assert.equal(chat.status, 'ok', JSON.stringify(chat));
    assert.equal(follower.frames.filter((f) => f.event === 'permission.request').length, 0);

    const plans = await received(follower, (f) => f.event === 'plan.updated' && f.conversation_id === id, 2);
    assert.deepEqual(
      plans.map((f) => f.plan),
      [FIRST, SECOND],
    );
    assert.equal(typeof plans[0]!.seq, 'number');
    // The system prompt tells the model when to use it.
    assert.match(fake.requests.at(-1)!.body.messages[0].content, /show your plan with todo/);
    // The model was told the outcome.
    const toolResults = fake.requests
      .at(-1)!
      .body.messages.filter((m: { role: string }) => m.role === 'tool')
      .map((m: { content: string }) => m.content);
    assert.deepEqual(toolResults.slice(-2), ['Plan updated: 0 of 3 done.', 'Plan updated: 2 of 3 done.']);

    // Catch-up replays them to a client that follows again from before the turn.
    const late = await TestClient.authed(svc.wsUrl, svc.token);
    try {
      const again = await late.request({ type: 'follow_conversation', conversation_id: id, after_seq: followedAt });
      assert.equal(again.status, 'ok', JSON.stringify(again));
      const replayed = await received(late, (f) => f.event === 'plan.updated' && f.conversation_id === id, 2);
      assert.deepEqual(
        replayed.map((f) => f.plan),
        [FIRST, SECOND],
      );
    } finally {
      late.close();
    }

    const plan = await follower.request({ type: 'get_plan', conversation_id: id });
    assert.equal(plan.status, 'ok', JSON.stringify(plan));
    assert.deepEqual((plan.data as { plan: unknown }).plan, SECOND);
    const list = await follower.request({ type: 'list_conversations' });
    const row = (list.data as { conversations: { id: string; plan_summary?: unknown }[] }).conversations.find((c) => c.id === id);
    assert.deepEqual(row?.plan_summary, { done: 2, total: 3 });
  } finally {
    sender.close();
    follower.close();
  }

  await svc.stop();
  svc = await startService(config(), { dataDir: data.dir });
  const reader = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const plan = await reader.request({ type: 'get_plan', conversation_id: id });
    assert.deepEqual((plan.data as { plan: unknown }).plan, SECOND);
  } finally {
    reader.close();
  }
});

test('a bad plan is refused to the model and changes nothing; a conversation without a plan answers an empty one', async () => {
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  try {
    const tooMany = Array.from({ length: 51 }, (_, i) => ({ text: `step ${i}`, status: 'pending' }));
    fake.script(
      { tool_calls: [{ name: 'todo', arguments: { items: tooMany } }] },
      { tool_calls: [{ name: 'todo', arguments: { items: [{ text: 'x'.repeat(301), status: 'pending' }] } }] },
      { tool_calls: [{ name: 'todo', arguments: { items: [{ text: 'ok', status: 'started' }] } }] },
      { text: 'gave up' },
    );
    const chat = await client.request({ type: 'chat', message: 'plan badly' });
    assert.equal(chat.status, 'ok', JSON.stringify(chat));
    const id = (chat.data as { conversation_id: string }).conversation_id;
    const toolResults = fake.requests
      .at(-1)!
      .body.messages.filter((m: { role: string }) => m.role === 'tool')
      .map((m: { content: string }) => m.content);
    assert.match(toolResults[0], /at most 50 items/);
    assert.match(toolResults[1], /at most 300 characters/);
    assert.match(toolResults[2], /items\.0\.status/);
    assert.equal(client.frames.filter((f) => f.event === 'plan.updated').length, 0);
    const plan = await client.request({ type: 'get_plan', conversation_id: id });
    assert.deepEqual((plan.data as { plan: unknown }).plan, []);
    const missing = await client.request({ type: 'get_plan', conversation_id: 'no-such-conversation' });
    assert.equal(missing.status, 'error');
  } finally {
    client.close();
  }
});
