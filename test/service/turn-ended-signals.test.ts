import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { startService } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

// turn.ended's `instructions` and `files_written` (docs/protocol.md, "Events"): what a page needs to know
// whether to ask list_instructions and list_turn_changes again after a turn (s33), from a real service over
// its WebSocket, the model a fake OpenAI server, the workspace real files.

let fake: FakeOpenAI;
const cleanups: (() => Promise<void>)[] = [];

before(async () => {
  fake = await startFakeOpenAI();
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await fake?.close();
});

async function setUp(): Promise<{ workspace: string; client: TestClient }> {
  const temp = await tempDir('ra-turn-signals-');
  cleanups.push(temp.cleanup);
  const svc = await startService({ base_url: fake.url, workspace: temp.dir, permission_mode: 'allow' }, { toolTimeoutMs: 5_000 });
  cleanups.push(() => svc.dispose());
  const client = await TestClient.authed(svc.wsUrl, svc.token);
  cleanups.push(async () => client.close());
  return { workspace: temp.dir, client };
}

type Ended = { conversation_id: string; outcome: string; instructions?: string; files_written?: number };

/** One chat, answered; its turn.ended. */
async function chat(client: TestClient, message: string, conversationId?: string): Promise<Ended> {
  const ended = client.next((f) => f.event === 'turn.ended');
  const reply = await client.request({ type: 'chat', message, ...(conversationId ? { conversation_id: conversationId } : {}) });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  const event = (await ended) as unknown as Ended;
  assert.equal(event.outcome, 'answered');
  return event;
}

async function listed(client: TestClient, conversationId: string): Promise<{ files: { path: string; bytes: number }[]; fingerprint?: string }> {
  const answer = await client.request({ type: 'list_instructions', conversation_id: conversationId });
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  return answer.data as { files: { path: string; bytes: number }[]; fingerprint?: string };
}

/** A service whose workspace holds AGENTS.md (`rules`), and a first turn answered in a new conversation: its turn.ended and list_instructions after it. */
async function firstTurn(rules: string) {
  const { workspace, client } = await setUp();
  await writeFile(join(workspace, 'AGENTS.md'), rules);
  fake.script({ text: 'first reply' });
  const first = await chat(client, 'hello');
  const id = first.conversation_id;
  return { workspace, client, first, id, shown: await listed(client, id) };
}

/** The list names the root's AGENTS.md only, at the size of `text`. */
function namesAgents(list: { files: { path: string; bytes: number }[] }, text: string): void {
  assert.deepEqual(
    list.files.map((f) => [f.path, f.bytes]),
    [['AGENTS.md', Buffer.byteLength(text)]],
  );
}

describe('turn.ended says what a page may show anew (s33)', () => {
  test('instructions: the same after a turn that changed nothing, another after AGENTS.md was edited between turns, as list_instructions answers', async () => {
    const { workspace, client, first, id, shown } = await firstTurn('rules, first version\n');
    assert.ok(first.instructions, 'turn.ended names the files in force');
    assert.equal(first.instructions, shown.fingerprint, "the turn's figure is list_instructions' for the same files");
    assert.equal(first.files_written, 0, 'a turn that ran no tool wrote nothing');

    fake.script({ text: 'two' });
    const second = await chat(client, 'again', id);
    assert.equal(second.instructions, shown.fingerprint, 'nothing changed: a page showing them has nothing to ask');

    // The person edits AGENTS.md between turns: the next turn's end says the files differ from those shown.
    await writeFile(join(workspace, 'AGENTS.md'), 'rules, second version, longer\n');
    fake.script({ text: 'three' });
    const third = await chat(client, 'and again', id);
    assert.notEqual(third.instructions, shown.fingerprint);
    const now = await listed(client, id);
    assert.equal(third.instructions, now.fingerprint);
    namesAgents(now, 'rules, second version, longer\n');

    // Same size, other words: still told.
    await writeFile(join(workspace, 'AGENTS.md'), 'rules, SECOND version, longer\n');
    fake.script({ text: 'four' });
    const fourth = await chat(client, 'once more', id);
    assert.notEqual(fourth.instructions, now.fingerprint);
    assert.equal(fourth.instructions, (await listed(client, id)).fingerprint);
  });

  test("instructions and files_written after a turn whose tool wrote the AGENTS.md it had read (the turn's last request saw the old words)", async () => {
    const { client, id, shown: before } = await firstTurn('old rules\n');
    fake.script(
      { tool_calls: [{ id: 'r1', name: 'read_file', arguments: { path: 'AGENTS.md' } }] },
      { tool_calls: [{ id: 'w1', name: 'write_file', arguments: { path: 'AGENTS.md', content: 'new rules the turn wrote\n' } }] },
      { text: 'rewrote the rules' },
    );
    const ended = await chat(client, 'rewrite the rules', id);
    assert.equal(ended.files_written, 1);
    const after = await listed(client, id);
    assert.notEqual(after.fingerprint, before.fingerprint);
    assert.equal(ended.instructions, after.fingerprint, 'looked at again after the write');
    namesAgents(after, 'new rules the turn wrote\n');
  });
});

test('attack: the fingerprint cannot be used to confirm a guess of the instruction files offline (keyed per service)', async () => {
  // A client that may see a conversation gets `instructions` (a webhook account, a password user), but not
  // the files' words. An unkeyed hash of the words would let it confirm a guess of them (a secret written in
  // the user's AGENTS.md) without the service: two services with the same files would then agree.
  const rules = 'deploy key: hunter2\n';
  const one = await firstTurn(rules);
  const two = await firstTurn(rules);
  assert.ok(one.first.instructions && two.first.instructions);
  assert.notEqual(one.first.instructions, two.first.instructions, 'the same words give another fingerprint on another service');
  assert.equal(one.shown.fingerprint, one.first.instructions, 'and the same one within a service');
});
