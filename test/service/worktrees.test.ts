import assert from 'node:assert/strict';
import { chmodSync, existsSync } from 'node:fs';
import { mkdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import { MOMENT_HEADING } from '../../src/agent/prompt/environment';
import type { Conversation } from '../../src/protocol';
import type { WorktreeInfo } from '../../src/protocol/worktrees';
import { startFakeOpenAI, type FakeOpenAI, type FakeStep, type RecordedRequest } from '../helpers/fake-openai';
import { git, gitRepository } from '../helpers/git-repo';
import { postJson, startService, type RunningService } from '../helpers/service';
import { startWebhookReceiver } from '../helpers/webhook-receiver';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

// Issue 24: a conversation in its own git worktree. Real repositories in a temp dir, the real service,
// the fake provider driving the tools: a user message `TOOL <name> <json arguments>` makes the model
// call that tool, and its reply is `RESULT: <the tool's result>`, so each test reads what the tool did.

const toolTurn = (request: RecordedRequest): FakeStep => {
  // The turn's note (time, git) comes after the conversation: the last message of the conversation is before it.
  const messages = (request.body.messages as { role: string; content: string }[]).filter((m) => !String(m.content).startsWith(MOMENT_HEADING));
  const last = messages.at(-1)!;
  if (last.role === 'tool') return { text: `RESULT: ${last.content}` };
  const asked = /^TOOL (\w+) (.*)$/s.exec(String(last.content));
  return asked ? { tool_calls: [{ name: asked[1], arguments: JSON.parse(asked[2]) as Record<string, unknown> }] } : { text: 'ok' };
};
const TOOL = (name: string, args: Record<string, unknown>) => `TOOL ${name} ${JSON.stringify(args)}`;

let root: string;
let repo: string;
let baseCommit: string;
let cleanup: () => Promise<void>;
let openai: FakeOpenAI;
let svc: RunningService;
let client: TestClient;

before(async () => {
  ({ dir: root, cleanup } = await tempDir('ra-worktrees-'));
  root = await realpath(root);
  repo = join(root, 'repo');
  baseCommit = await gitRepository(repo, { 'app.ts': 'original\n', 'secret.txt': "the user's own\n" });
  openai = await startFakeOpenAI();
  openai.setDefault(toolTurn);
  svc = await startService({ provider: 'openai', model: 'gpt-4o-mini', base_url: openai.url, workspace: repo, permission_mode: 'allow' });
  client = await TestClient.authed(svc.wsUrl, svc.token);
});
after(async () => {
  client?.close();
  await svc?.dispose();
  await openai?.close();
  await cleanup?.();
});

async function chat(frame: Record<string, unknown>): Promise<{ status: string; code?: string; error?: string; data?: { response: string; conversation_id: string } }> {
  return (await client.request({ type: 'chat', ...frame }, 60_000)) as never;
}

async function conversation(id: string): Promise<Conversation> {
  const list = (await client.request({ type: 'list_conversations', limit: 100 })).data as { conversations: Conversation[] };
  const found = list.conversations.find((c) => c.id === id);
  assert.ok(found, `conversation ${id} listed`);
  return found;
}

async function newWorktreeConversation(title: string): Promise<{ id: string; worktree: WorktreeInfo }> {
  const reply = await chat({ message: title, worktree: true });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  const id = reply.data!.conversation_id;
  const { worktree } = await conversation(id);
  assert.ok(worktree);
  return { id, worktree };
}

const statusOf = (dir: string) => git(dir, 'status', '--porcelain=v1', '--untracked-files=all');

describe('a conversation in its own worktree', () => {
  test("chat worktree:true makes assistant/<slug>-<id> from HEAD in <repo>.worktrees/, and the user's tree is untouched", async () => {
    const before = statusOf(repo);
    const { id, worktree } = await newWorktreeConversation('Fix the login bug, please!');
    assert.match(worktree.branch, new RegExp(`^assistant/fix-the-login-bug-please-${id.replace(/-/g, '').slice(0, 8)}$`));
    assert.equal(worktree.base_branch, 'main');
    assert.equal(worktree.base_commit, baseCommit);
    assert.equal(worktree.state, 'active');
    assert.equal(worktree.changed_files, 0);
    assert.equal(worktree.base_moved, false);
    assert.equal(worktree.path, join(root, 'repo.worktrees', worktree.branch.slice('assistant/'.length)));
    assert.equal(await readFile(join(worktree.path, 'app.ts'), 'utf8'), 'original\n');
    assert.match(git(repo, 'worktree', 'list', '--porcelain'), new RegExp(`branch refs/heads/${worktree.branch}`));
    assert.equal(statusOf(repo), before);
    assert.equal(git(repo, 'rev-parse', '--abbrev-ref', 'HEAD').trim(), 'main');
  });

  test('a conversation of the workspace lists worktree: null, and may not switch later', async () => {
    const reply = await chat({ message: 'hello' });
    assert.equal(reply.status, 'ok');
    const id = reply.data!.conversation_id;
    assert.equal((await conversation(id)).worktree, null);
    const switched = await chat({ message: 'now in a worktree', conversation_id: id, worktree: true });
    assert.equal(switched.status, 'error');
    assert.equal(switched.code, 'invalid_request');
    assert.match(String(switched.error), /chosen when a conversation starts/);
    assert.equal((await chat({ message: 'same', conversation_id: id, worktree: false })).status, 'ok');
  });

  test('worktree: a non-boolean is refused by the schema', async () => {
    const reply = await chat({ message: 'x', worktree: 'yes' });
    assert.equal(reply.code, 'invalid_request');
    assert.match(String(reply.error), /worktree/);
  });

  test('two conversations write the same file in two worktrees while the person edits it: all three versions exist', async () => {
    const first = await newWorktreeConversation('first run');
    const second = await newWorktreeConversation('second run');
    await writeFile(join(repo, 'app.ts'), "the person's edit\n");
    const [a, b] = await Promise.all([
      chat({ conversation_id: first.id, message: TOOL('write_file', { path: 'app.ts', content: 'version A\n' }) }),
      chat({ conversation_id: second.id, message: TOOL('write_file', { path: 'app.ts', content: 'version B\n' }) }),
    ]);
    assert.match(a.data!.response, /^RESULT: /);
    assert.match(b.data!.response, /^RESULT: /);
    assert.equal(await readFile(join(first.worktree.path, 'app.ts'), 'utf8'), 'version A\n');
    assert.equal(await readFile(join(second.worktree.path, 'app.ts'), 'utf8'), 'version B\n');
    assert.equal(await readFile(join(repo, 'app.ts'), 'utf8'), "the person's edit\n");
    // Counted at the turn's end: list_conversations reads the row, not git.
    assert.equal((await conversation(first.id)).worktree?.changed_files, 1);
    assert.equal((await conversation(second.id)).worktree?.changed_files, 1);
    await writeFile(join(repo, 'app.ts'), 'original\n');
  });

  test("paths the model sees and run_command's folder are the worktree's", async () => {
    const { id, worktree } = await newWorktreeConversation('where am i');
    const pwd = await chat({ conversation_id: id, message: TOOL('run_command', { command: 'pwd' }) });
    assert.ok(pwd.data!.response.includes(worktree.path), pwd.data!.response);
    const messages = openai.requests.at(-1)!.body.messages as { role: string; content: string }[];
    const system = messages[0].content;
    assert.ok(system.includes(`- Workspace folder: ${worktree.path}\n`), system);
    assert.ok(!system.includes(`- Workspace folder: ${repo}\n`), "the user's tree is not offered");
    // The turn's note (time, git) names the worktree's branch.
    assert.ok(
      messages.some((m) => m.role === 'user' && m.content.includes(`- Git: branch ${worktree.branch},`)),
      JSON.stringify(messages.at(-1)),
    );
  });

  test("undo_turn restores the worktree's file from its before-image, never the person's", async () => {
    const { id, worktree } = await newWorktreeConversation('undo in a worktree');
    await chat({ conversation_id: id, message: TOOL('write_file', { path: 'app.ts', content: "the run's version\n" }) });
    const messages = ((await client.request({ type: 'get_messages', conversation_id: id })).data as { messages: { id: string; role: string }[] }).messages;
    const reply = messages.filter((m) => m.role === 'assistant').at(-1)!;
    await writeFile(join(repo, 'app.ts'), "the person's edit\n");
    const undo = await client.request({ type: 'undo_turn', conversation_id: id, message_id: reply.id, confirm: true });
    assert.equal(undo.status, 'ok', JSON.stringify(undo));
    assert.deepEqual(
      (undo.data as { files: { path: string }[] }).files.map((f) => f.path),
      ['app.ts'],
    );
    assert.equal(await readFile(join(worktree.path, 'app.ts'), 'utf8'), 'original\n');
    assert.equal(await readFile(join(repo, 'app.ts'), 'utf8'), "the person's edit\n");
    await writeFile(join(repo, 'app.ts'), 'original\n');
  });

  test("list_prompts of a worktree conversation reads the worktree's saved prompts, not the workspace's", async (t) => {
    const { id } = await newWorktreeConversation('prompts in a worktree');
    const prompts = join(repo, '.remote-assistant', 'prompts');
    await mkdir(prompts, { recursive: true });
    await writeFile(join(prompts, 'mine.md'), "the person's own prompt\n");
    t.after(() => rm(join(repo, '.remote-assistant'), { recursive: true, force: true }));
    await chat({ conversation_id: id, message: TOOL('write_file', { path: '.remote-assistant/prompts/branch.md', content: "the branch's prompt\n" }) });
    const names = async (frame: Record<string, unknown>) =>
      ((await client.request({ type: 'list_prompts', ...frame })).data as { prompts: { name: string; scope: string }[] }).prompts.filter((p) => p.scope === 'project').map((p) => p.name);
    assert.deepEqual(await names({ conversation_id: id }), ['branch']);
    assert.deepEqual(await names({}), ['mine']);
    const unknown = await client.request({ type: 'list_prompts', conversation_id: 'no-such-conversation' });
    assert.equal(unknown.code, 'not_found');
  });

  test('a base branch that moved on is told after the next turn', async () => {
    const { id } = await newWorktreeConversation('base moves');
    await writeFile(join(repo, 'other.txt'), 'x\n');
    git(repo, 'add', 'other.txt');
    git(repo, 'commit', '-q', '-m', 'the person commits');
    await chat({ conversation_id: id, message: 'anything' });
    assert.equal((await conversation(id)).worktree?.base_moved, true);
    git(repo, 'reset', '-q', '--hard', baseCommit);
  });

  test('the list row is fresh after revert, commit, land and discard: each sends conversation.updated with the new counts', async () => {
    const { id } = await newWorktreeConversation('row counts');
    await chat({ conversation_id: id, message: TOOL('write_file', { path: 'app.ts', content: 'changed here\n' }) });
    await chat({ conversation_id: id, message: TOOL('write_file', { path: 'new.ts', content: 'new here\n' }) });
    assert.equal((await conversation(id)).worktree?.changed_files, 2);
    // A client of its own: it hears only what happens from now on, each event taken once.
    const watcher = await TestClient.authed(svc.wsUrl, svc.token);
    const updated = async (check: (worktree: WorktreeInfo) => boolean) => {
      const frame = await watcher.next((f) => f.event === 'conversation.updated' && f.conversation_id === id && check((f.conversation as Conversation).worktree!), 5_000);
      return (frame.conversation as Conversation).worktree!;
    };
    const ok = async (frame: Record<string, unknown>) => assert.equal((await client.request(frame, 60_000)).status, 'ok');
    try {
      await ok({ type: 'revert_changes', conversation_id: id, path: 'new.ts' });
      assert.equal((await updated(() => true)).changed_files, 1);
      assert.equal((await conversation(id)).worktree?.changed_files, 1);

      await ok({ type: 'commit_changes', conversation_id: id, message: 'the edit' });
      assert.equal((await updated(() => true)).changed_files, 1);

      await ok({ type: 'land_changes', conversation_id: id, method: 'merge' });
      const landed = await updated(() => true);
      assert.equal(landed.state, 'landed');
      assert.equal(landed.base_moved, true);
      assert.equal((await conversation(id)).worktree?.base_moved, true);

      // Without confirm: what would be lost, the worktree named by its branch, never by its folder.
      const record = svc.service.store.worktrees.worktreeOf(id)!;
      const unconfirmed = await client.request({ type: 'discard_changes', conversation_id: id });
      assert.equal(unconfirmed.code, 'invalid_request');
      assert.ok(String(unconfirmed.error).includes(record.branch), String(unconfirmed.error));
      for (const place of [record.path, root]) assert.ok(!String(unconfirmed.error).includes(place), `${String(unconfirmed.error)} shows ${place}`);
      await ok({ type: 'discard_changes', conversation_id: id, confirm: true });
      assert.equal((await updated(() => true)).state, 'discarded');
    } finally {
      watcher.close();
      git(repo, 'reset', '-q', '--hard', baseCommit);
    }
  });
});

describe('ways out of a worktree (attacks)', () => {
  let id: string;
  let worktree: WorktreeInfo;
  before(async () => {
    await symlink(join(repo, 'secret.txt'), join(repo, 'link-out'));
    git(repo, 'add', 'link-out');
    git(repo, 'commit', '-q', '-m', "a link into the user's tree");
    ({ id, worktree } = await newWorktreeConversation('attacks'));
  });
  after(() => {
    git(repo, 'reset', '-q', '--hard', baseCommit);
  });

  const refused = async (name: string, args: Record<string, unknown>, why: RegExp) => {
    const reply = await chat({ conversation_id: id, message: TOOL(name, args) });
    assert.match(reply.data!.response, why, `${name} ${JSON.stringify(args)}: ${reply.data!.response}`);
  };

  test("attack: a symbolic link in the worktree pointing into the user's tree is refused, reading and writing", async () => {
    assert.ok(existsSync(join(worktree.path, 'link-out')));
    await refused('read_file', { path: 'link-out' }, /outside the workspace/);
    await refused('write_file', { path: 'link-out', content: 'pwned\n' }, /outside the workspace/);
    assert.equal(await readFile(join(repo, 'secret.txt'), 'utf8'), "the user's own\n");
  });

  test("attack: ../ and absolute paths into the user's tree are refused", async () => {
    await refused('write_file', { path: '../../repo/app.ts', content: 'pwned\n' }, /outside the workspace/);
    await refused('edit_file', { path: join(repo, 'app.ts'), old_string: 'original', new_string: 'pwned' }, /outside the workspace/);
    await refused('read_file', { path: join(repo, 'secret.txt') }, /outside the workspace/);
    await refused('list_directory', { path: '..' }, /outside the workspace/);
    await refused('run_command', { command: 'ls', cwd: repo }, /outside the workspace/);
    assert.equal(await readFile(join(repo, 'app.ts'), 'utf8'), 'original\n');
  });

  test("attack: the worktree's .git file and the repository's .git folder are not written by file tools", async () => {
    await refused('write_file', { path: '.git', content: `gitdir: ${join(repo, '.git')}\n` }, /git's own data/);
    await refused('write_file', { path: join(repo, '.git', 'hooks', 'pre-commit'), content: '#!/bin/sh\n' }, /outside the workspace/);
    assert.match(await readFile(join(worktree.path, '.git'), 'utf8'), /^gitdir: /);
    assert.equal(existsSync(join(repo, '.git', 'hooks', 'pre-commit')), false);
  });

  test('run_command is a shell: it starts in the worktree, and the permission prompt names the worktree', async () => {
    // What the sandbox cannot promise: a command may `cd ..` (docs/protocol.md, "Worktrees"). It starts
    // in the worktree, and in `ask` mode the person sees where before allowing it.
    const out = await chat({ conversation_id: id, message: TOOL('run_command', { command: 'cd .. && pwd' }) });
    assert.ok(out.data!.response.includes(join(root, 'repo.worktrees')), out.data!.response);
    await client.request({ type: 'update_config', config: { permission_mode: 'ask' } });
    try {
      const pending = chat({ conversation_id: id, message: TOOL('run_command', { command: 'echo hi' }) });
      const prompt = await client.next((frame) => frame.event === 'permission.request' && frame.conversation_id === id);
      assert.deepEqual(prompt.worktree, { branch: worktree.branch, path: worktree.path });
      assert.equal((prompt.preview as { cwd: string }).cwd, '.');
      await client.request({ type: 'permission_response', request_id: prompt.request_id, decision: 'deny' });
      await pending;
      // A command naming the way out is flagged in the prompt: cd .., the person's tree by its absolute path.
      const leaving = chat({ conversation_id: id, message: TOOL('run_command', { command: `cd .. && cat ${join(repo, 'secret.txt')}` }) });
      const warned = await client.next((frame) => frame.event === 'permission.request' && frame.conversation_id === id && frame.request_id !== prompt.request_id);
      assert.deepEqual((warned.preview as { warnings: string[] }).warnings, ['leaves the workspace: cd ..', `leaves the workspace: ${join(repo, 'secret.txt')}`]);
      await client.request({ type: 'permission_response', request_id: warned.request_id, decision: 'deny' });
      await leaving;
    } finally {
      await client.request({ type: 'update_config', config: { permission_mode: 'allow' } });
    }
  });

  test("attack: a conversation of the workspace cannot reach a worktree's folder", async () => {
    const reply = await chat({ message: TOOL('read_file', { path: join(worktree.path, 'app.ts') }) });
    assert.match(reply.data!.response, /outside the workspace/);
    const relative = await chat({ message: TOOL('write_file', { path: `../repo.worktrees/${worktree.branch.slice('assistant/'.length)}/app.ts`, content: 'pwned\n' }) });
    assert.match(relative.data!.response, /outside the workspace/);
    assert.equal(await readFile(join(worktree.path, 'app.ts'), 'utf8'), 'original\n');
  });

  test("attack: a conversation of the workspace cannot write the repository's .git (hooks, config) through file tools", async () => {
    const hook = await chat({ message: TOOL('write_file', { path: '.git/hooks/pre-commit', content: '#!/bin/sh\ntouch /tmp/pwned\n' }) });
    assert.match(hook.data!.response, /git's own data/);
    const config = await chat({ message: TOOL('edit_file', { path: '.git/config', old_string: '[core]', new_string: '[core]\n\tfsmonitor = touch /tmp/pwned' }) });
    assert.match(config.data!.response, /git's own data/);
    const upper = await chat({ message: TOOL('write_file', { path: '.GIT/hooks/post-commit', content: '#!/bin/sh\n' }) });
    assert.match(upper.data!.response, /git's own data/);
    assert.equal(existsSync(join(repo, '.git', 'hooks', 'pre-commit')), false);
    assert.doesNotMatch(await readFile(join(repo, '.git', 'config'), 'utf8'), /fsmonitor/);
  });

  test('attack: a hook of the repository does not run when the service makes a worktree (post-checkout, core.hooksPath)', async () => {
    const marker = join(root, 'hook-ran');
    const hooks = join(root, 'hooks');
    await mkdir(hooks, { recursive: true });
    for (const file of [join(repo, '.git', 'hooks', 'post-checkout'), join(hooks, 'post-checkout')]) {
      await writeFile(file, `#!/bin/sh\ntouch '${marker}'\n`);
      chmodSync(file, 0o755);
    }
    try {
      await newWorktreeConversation('hooks stay quiet');
      git(repo, 'config', 'core.hooksPath', hooks);
      await newWorktreeConversation('hooks stay quiet again');
      assert.equal(existsSync(marker), false, 'a hook of the repository ran');
    } finally {
      git(repo, 'config', '--unset', 'core.hooksPath');
      await rm(join(repo, '.git', 'hooks', 'post-checkout'));
    }
  });
});

describe('what goes wrong', () => {
  test('the worktree folder deleted by the user: state missing, turns refused with a clear message, the branch kept', async () => {
    const { id, worktree } = await newWorktreeConversation('to be deleted');
    await rm(worktree.path, { recursive: true, force: true });
    const reply = await chat({ conversation_id: id, message: 'go on' });
    assert.equal(reply.status, 'error');
    assert.equal(reply.code, 'conflict');
    assert.match(String(reply.error), /no longer exists/);
    assert.equal((await conversation(id)).worktree?.state, 'missing');
    assert.match(git(repo, 'branch', '--list', worktree.branch), new RegExp(worktree.branch));
  });

  test('a detached HEAD: the worktree is made from its commit, base_branch null', async () => {
    git(repo, 'checkout', '-q', '--detach', 'HEAD');
    try {
      const { worktree } = await newWorktreeConversation('detached');
      assert.equal(worktree.base_branch, null);
      assert.equal(worktree.base_commit, git(repo, 'rev-parse', 'HEAD').trim());
    } finally {
      git(repo, 'checkout', '-q', 'main');
    }
  });

  test('git missing (PATH without git): a clear conflict, and no conversation is stored', async () => {
    const path = process.env.PATH;
    const listed = ((await client.request({ type: 'list_conversations', limit: 100 })).data as { conversations: Conversation[] }).conversations.length;
    process.env.PATH = root;
    let reply;
    try {
      reply = await chat({ message: 'no git here', worktree: true });
    } finally {
      process.env.PATH = path;
    }
    assert.equal(reply.status, 'error');
    assert.equal(reply.code, 'conflict');
    assert.match(String(reply.error), /git is not installed/);
    assert.equal(((await client.request({ type: 'list_conversations', limit: 100 })).data as { conversations: Conversation[] }).conversations.length, listed);
  });
});

/**
 * A service on `workspace` with a webhook account `ci` whose conversations must have a worktree, its
 * callbacks posted to a receiver of the test's own: `post` sends it a message, `errorCallback` waits for
 * a conversation's error callback and answers its text.
 */
async function webhookService(t: TestContext, workspace: string, worktrees?: Record<string, unknown>, account: Record<string, unknown> = {}) {
  const secret = 'worktree-webhook-secret-0123456789';
  const receiver = await startWebhookReceiver({ secret });
  t.after(() => receiver.close());
  const service = await startService(
    {
      provider: 'openai',
      model: 'gpt-4o-mini',
      base_url: openai.url,
      workspace,
      ...(worktrees ? { worktrees } : {}),
      channels: { webhook: { accounts: { ci: { incoming_path: '/ci', outgoing_url: receiver.url('/ci'), secret, tools: 'allow', worktree: 'required', ...account } } } },
    },
    { webhook: { retryBaseMs: 50, retryMaxMs: 500, timeoutMs: 1_000 } },
  );
  t.after(() => service.dispose());
  const post = async (body: Record<string, unknown>): Promise<string> => {
    const reply = await postJson(`${service.httpUrl}/ci`, body, { 'x-service-secret': secret });
    assert.equal(reply.status, 202, reply.text);
    return (reply.body!.data as { conversation_id: string }).conversation_id;
  };
  const errorCallback = async (conversationId: string): Promise<string> => {
    const failed = () =>
      receiver.requests.map((c) => c.body as { conversation_id?: unknown; status?: unknown; error?: unknown } | undefined).find((b) => b?.conversation_id === conversationId && b.status === 'error');
    await receiver.waitFor(() => failed() !== undefined, 'the error callback');
    return String(failed()!.error);
  };
  return { service, receiver, post, errorCallback };
}

describe('defaults, a workspace that is not a repository, clean-up at start', () => {
  test('not a repository: a clear conflict; worktrees.default.lan makes a LAN chat ask for one', async (t) => {
    const { dir, cleanup: done } = await tempDir('ra-worktrees-plain-');
    t.after(done);
    const service = await startService({ provider: 'openai', model: 'gpt-4o-mini', base_url: openai.url, workspace: dir, worktrees: { default: { lan: true } } });
    t.after(() => service.dispose());
    const lan = await TestClient.authed(service.wsUrl, service.token);
    t.after(() => lan.close());
    const reply = await lan.request({ type: 'chat', message: 'hi' });
    assert.equal(reply.status, 'error');
    assert.equal(reply.code, 'conflict');
    assert.match(String(reply.error), /not? .*git repository/);
    assert.equal((await lan.request({ type: 'chat', message: 'in the workspace then', worktree: false })).status, 'ok');
  });

  test("get_config shows service.json's worktrees settings and the asking client's default (the phone's toggle starts from it)", async (t) => {
    const worktrees = { default: { lan: true, webhook: true }, folder: '../elsewhere', allow_hooks: true };
    const service = await startService({ provider: 'openai', model: 'gpt-4o-mini', base_url: openai.url, workspace: repo, worktrees });
    t.after(() => service.dispose());
    const lan = await TestClient.authed(service.wsUrl, service.token);
    t.after(() => lan.close());
    const config = (await lan.request({ type: 'get_config' })).data as { worktrees: unknown };
    assert.deepEqual(config.worktrees, { default: { editor: false, lan: true, relay: false, webhook: true }, folder: '../elsewhere', allow_hooks: true, new_chat: true });
    const plain = (await client.request({ type: 'get_config' })).data as { worktrees: unknown };
    assert.deepEqual(plain.worktrees, { default: { editor: false, lan: false, relay: false, webhook: false }, folder: null, allow_hooks: false, new_chat: false });
  });

  test('a webhook account with worktree "required": its conversation works in its own worktree from its first message', async (t) => {
    const { service, receiver, post, errorCallback } = await webhookService(t, repo);
    const conversation_id = await post({ message: TOOL('write_file', { path: 'app.ts', content: 'from the webhook\n' }) });
    await receiver.waitFor((r) => r.requests.some((c) => c.body?.conversation_id === conversation_id), 'the callback');
    const record = service.service.store.worktrees.worktreeOf(conversation_id);
    assert.ok(record, 'the conversation has a worktree');
    assert.equal(await readFile(join(record.path, 'app.ts'), 'utf8'), 'from the webhook\n');
    assert.equal(await readFile(join(repo, 'app.ts'), 'utf8'), 'original\n');

    // Its folder deleted: the sender's error callback names the branch, never where the machine keeps it.
    await rm(record.path, { recursive: true, force: true });
    await post({ message: 'go on', conversation_id });
    const error = await errorCallback(conversation_id);
    assert.match(error, /no longer exists/);
    assert.ok(error.includes(record.branch), error);
    for (const place of [record.path, repo, dirname(record.path)]) assert.ok(!error.includes(place), `${error} shows ${place}`);
  });

  test('a webhook account over its daily budget gets no worktree for a new conversation: no checkout is made for a message that is not run', async (t) => {
    const { service, receiver, post, errorCallback } = await webhookService(t, repo, undefined, { budget: { tokens_per_day: 1 } });
    const first = await post({ message: 'spends the budget' });
    await receiver.waitFor((r) => r.requests.some((c) => c.body?.conversation_id === first), 'the first reply');
    const checkouts = () =>
      git(repo, 'worktree', 'list', '--porcelain')
        .split('\n')
        .filter((line) => line.startsWith('worktree ')).length;
    const before = { rows: service.service.store.worktrees.list().length, checkouts: checkouts() };
    // A sender over budget, posting new conversations (120 a minute are accepted): each would be a full checkout.
    const refused = await Promise.all([post({ message: 'over budget one' }), post({ message: 'over budget two' })]);
    for (const conversation of refused) {
      assert.match(await errorCallback(conversation), /daily budget of 1 tokens reached/);
      assert.equal(service.service.store.worktrees.worktreeOf(conversation), undefined, 'no worktree for a message that is not run');
    }
    assert.deepEqual({ rows: service.service.store.worktrees.list().length, checkouts: checkouts() }, before);
  });

  test("a webhook sender's error callbacks name no folder of the machine: not a repository, no commit yet, git's own failure", async (t) => {
    const { dir, cleanup: done } = await tempDir('ra-worktrees-webhook-');
    t.after(done);
    const place = await realpath(dir);
    const workspace = join(place, 'project');
    await mkdir(workspace);
    // worktrees.folder is a file: git itself fails to make the worktree there, and says where.
    await writeFile(join(place, 'not-a-folder'), '');
    const { post, errorCallback } = await webhookService(t, workspace, { folder: '../not-a-folder' });
    const errorFor = async (message: string): Promise<string> => {
      const error = await errorCallback(await post({ message }));
      assert.ok(!error.includes(place), `${error} shows ${place}`);
      return error;
    };
    assert.match(await errorFor('not a repository'), /no workspace folder \(of 1\) is the top level of a git repository/);
    git(workspace, 'init', '-q', '-b', 'main');
    assert.match(await errorFor('no commit yet'), /the workspace's repository has no commit yet/);
    git(workspace, '-c', 'user.name=T', '-c', 'user.email=t@example.invalid', 'commit', '-q', '--allow-empty', '-m', 'first');
    assert.match(await errorFor('git fails'), /the worktree could not be made: .*the new worktree's folder/);
  });

  test("attack: git's error naming a folder outside the named ones (the repository's own git folder elsewhere) reaches a webhook sender without it (failed before: the path was shown)", async (t) => {
    const { dir, cleanup: done } = await tempDir('ra-worktrees-webhook-');
    t.after(done);
    const place = await realpath(dir);
    const workspace = join(place, 'project');
    // The repository keeps its git folder elsewhere (`.git` is a file naming it), and git cannot make the worktree's bookkeeping there.
    git(place, 'init', '-q', '-b', 'main', '--separate-git-dir', join(place, 'elsewhere.git'), workspace);
    git(workspace, '-c', 'user.name=T', '-c', 'user.email=t@example.invalid', 'commit', '-q', '--allow-empty', '-m', 'first');
    await writeFile(join(place, 'elsewhere.git', 'worktrees'), '');
    const { post, errorCallback } = await webhookService(t, workspace);
    const error = await errorCallback(await post({ message: 'git fails' }));
    assert.match(error, /the worktree could not be made: .*could not create leading directories of '\[path\]'/);
    assert.ok(!error.includes(place), `${error} shows ${place}`);
  });

  test("a deleted conversation's worktree is removed at the next start; its branch too unless it holds commits", async (t) => {
    const { dir, cleanup: done } = await tempDir('ra-worktrees-restart-');
    t.after(done);
    const project = join(await realpath(dir), 'project');
    await gitRepository(project, { 'a.txt': 'a\n' });
    const config = { provider: 'openai', model: 'gpt-4o-mini', base_url: openai.url, workspace: project, permission_mode: 'allow' };
    const first = await startService(config);
    const owner = await TestClient.authed(first.wsUrl, first.token);
    const made: { id: string; worktree: WorktreeInfo }[] = [];
    for (const title of ['empty one', 'with a commit']) {
      const reply = await owner.request({ type: 'chat', message: title, worktree: true });
      const id = (reply.data as { conversation_id: string }).conversation_id;
      const list = ((await owner.request({ type: 'list_conversations', limit: 10 })).data as { conversations: Conversation[] }).conversations;
      made.push({ id, worktree: list.find((c) => c.id === id)!.worktree! });
    }
    await writeFile(join(made[1].worktree.path, 'b.txt'), 'b\n');
    git(made[1].worktree.path, 'add', 'b.txt');
    git(made[1].worktree.path, 'commit', '-q', '-m', 'work of the run');
    // The second holds a commit not landed: deleting it asks for confirm (review and land, issue 24).
    for (const { id } of made) assert.equal((await owner.request({ type: 'delete_conversation', conversation_id: id, confirm: true })).status, 'ok');
    owner.close();
    await first.stop();
    const second = await startService(config, { dataDir: first.dataDir, keepConfig: true });
    t.after(() => second.dispose());
    t.after(() => first.dispose());
    await waitFor(() => made.every(({ worktree }) => !existsSync(worktree.path)), 'the worktrees removed', 20_000);
    const branches = git(project, 'branch', '--list', 'assistant/*');
    assert.doesNotMatch(branches, new RegExp(made[0].worktree.branch));
    assert.match(branches, new RegExp(made[1].worktree.branch));
    assert.equal(statusOf(project), '');
  });
});
