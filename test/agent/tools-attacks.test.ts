/**
 * Attacks on the tools through the real service: a hostile model (the fake provider, scripted) tries to
 * get more than the permission rules and the workspace allow. Each test failed on the code before its fix.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PermissionGate } from '../../src/agent/permissions';
import { startFakeAnthropic } from '../helpers/fake-anthropic';
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest } from '../helpers/fake-openai';
import { startService, type RunningService } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';
import { withoutNote } from '../helpers/service-note';

const posix = process.platform !== 'win32';
let fake: FakeOpenAI;
let workspace: string;
const cleanups: (() => Promise<void>)[] = [];

before(async () => {
  fake = await startFakeOpenAI();
  const temp = await tempDir('ra-attacks-');
  workspace = temp.dir;
  cleanups.push(temp.cleanup);
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await fake?.close();
});

async function service(config: Record<string, unknown>): Promise<RunningService> {
  const svc = await startService({ base_url: fake.url, workspace, ...config }, { permissionTimeoutMs: 1_000 });
  cleanups.push(() => svc.dispose());
  return svc;
}

function toolResultsIn(request: RecordedRequest): string[] {
  return (request.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => m.content);
}

describe('permission rules against shell lines', { skip: !posix }, () => {
  for (const mode of ['deny', 'ask'] as const) {
    test(`allow run_command:git status* does not let "git status; id > f" through (mode ${mode})`, async () => {
      const svc = await service({ permission_mode: mode, permission_rules: { allow: ['run_command:git status*', 'run_command:echo *'], deny: [] } });
      const client = await TestClient.authed(svc.wsUrl, svc.token);
      const attacks = [
        `git status; id > pwned-${mode}-1`,
        `git status && touch pwned-${mode}-2`,
        `git status | tee pwned-${mode}-3`,
        `git status $(touch pwned-${mode}-4)`,
        `git status \`touch pwned-${mode}-5\``,
        `git status\ntouch pwned-${mode}-6`,
        `git status > pwned-${mode}-7`,
        `echo "$(touch pwned-${mode}-8)"`,
        `echo ok & touch pwned-${mode}-9`,
      ];
      fake.script(
        { tool_calls: [...attacks.map((command) => ({ name: 'run_command', arguments: { command } })), { name: 'run_command', arguments: { command: "echo 'allowed; by the rule'" } }] },
        (request) => ({
          text: toolResultsIn(request).join(' | '),
        }),
      );
      const reply = await client.request({ type: 'chat', message: 'attack', id: `rules-${mode}` }, 20_000);
      assert.equal(reply.status, 'ok', JSON.stringify(reply));
      for (let i = 1; i <= attacks.length; i++) assert.equal(existsSync(join(workspace, `pwned-${mode}-${i}`)), false, attacks[i - 1]);
      // The rule still does its job for a plain command (quoted operators are plain text).
      assert.match((reply.data as { response: string }).response, /allowed; by the rule/);
      client.close();
    });
  }

  test('a deny rule matches any simple command of the line, even inside a substitution', async () => {
    const svc = await service({ permission_mode: 'allow', permission_rules: { allow: [], deny: ['run_command:touch *'] } });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const attacks = ['true; touch denied-1', 'echo $(touch denied-2)', '(touch denied-3)', '"touch" denied-4', 'true && t\\ouch denied-5'];
    fake.script({ tool_calls: attacks.map((command) => ({ name: 'run_command', arguments: { command } })) }, (request) => ({ text: toolResultsIn(request).join(' | ') }));
    const reply = await client.request({ type: 'chat', message: 'attack' }, 20_000);
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    for (let i = 1; i <= attacks.length; i++) assert.equal(existsSync(join(workspace, `denied-${i}`)), false, attacks[i - 1]);
    assert.equal(((reply.data as { response: string }).response.match(/Permission denied/g) ?? []).length, attacks.length);
    client.close();
  });
});

describe('custom tools', { skip: !posix }, () => {
  test('an argument starting with "-" cannot become an option of the program (sort -o<file outside>)', async () => {
    const outside = await tempDir('ra-attacks-outside-');
    cleanups.push(outside.cleanup);
    const victim = join(outside.dir, 'victim.txt');
    await writeFile(victim, 'precious\n');
    const svc = await service({
      permission_mode: 'allow',
      tools: [
        { name: 'sort_file', description: 'sorts a file', parameters: { file: 'string' }, command: ['sort', '{file}'] },
        { name: 'sort_flags', description: 'sorts with flags', parameters: { flags: { type: 'string', allow_options: true } }, command: ['printf', '[%s]', '{flags}'] },
      ],
    });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    fake.script(
      {
        tool_calls: [
          { name: 'sort_file', arguments: { file: `-o${victim}` } },
          { name: 'sort_flags', arguments: { flags: '-r' } },
        ],
      },
      (request) => ({ text: toolResultsIn(request).join(' | ') }),
    );
    const reply = await client.request({ type: 'chat', message: 'attack' }, 20_000);
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    assert.equal(await readFile(victim, 'utf8'), 'precious\n');
    const text = (reply.data as { response: string }).response;
    assert.match(text, /argument file starts with "-"/);
    assert.match(text, /\[-r\]/, 'a parameter with allow_options takes a leading dash');
    client.close();
  });
});

describe('search_files with a backtracking pattern', () => {
  test('the search ends with a time-limit error, and another socket is answered while it runs', async () => {
    await writeFile(join(workspace, 'redos.txt'), `${'a'.repeat(40)}!\n`);
    const svc = await service({ permission_mode: 'allow' });
    const chatter = await TestClient.authed(svc.wsUrl, svc.token);
    const other = await TestClient.authed(svc.wsUrl, svc.token);
    fake.script({ tool_calls: [{ name: 'search_files', arguments: { pattern: '(a+)+$', path: 'redos.txt' } }] }, (request) => ({ text: toolResultsIn(request).join(' | ') }));
    chatter.send({ type: 'chat', message: 'search', id: 'redos' });
    await chatter.next((f) => f.event === 'tool.call' && f.id === 'redos');
    // Let the search reach the pattern: before the fix the service's thread was stuck in it from here.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const config = await other.request({ type: 'get_config' }, 60_000);
    assert.equal(config.status, 'ok');
    assert.equal(
      chatter.frames.some((f) => f.event === 'tool.result' && f.id === 'redos'),
      false,
      'answered while the search was still running',
    );
    const reply = await chatter.next((f) => f.id === 'redos' && 'status' in f, 30_000);
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    assert.match((reply.data as { response: string }).response, /took more than \d+ s to match and was stopped/);
    chatter.close();
    other.close();
  });
});

describe('malformed tool-call arguments from the provider', () => {
  test('openai: the model gets "invalid arguments" as the tool result, and the chat completes', async () => {
    const svc = await service({ permission_mode: 'allow' });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    fake.script(
      {
        tool_calls: [
          { id: 'bad1', name: 'write_file', arguments: '{"path": "broken.txt", "content": "x' },
          { id: 'good1', name: 'list_directory', arguments: {} },
        ],
      },
      (request) => ({ text: `results: ${toolResultsIn(request).join(' | ')}` }),
    );
    const reply = await client.request({ type: 'chat', message: 'go', id: 'malformed' }, 20_000);
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    const tools = (fake.requests.at(-1)!.body.messages as { role: string; tool_call_id?: string; content: string }[]).filter((m) => m.role === 'tool');
    assert.equal(tools.length, 2, 'both calls answered');
    assert.match(tools.find((m) => m.tool_call_id === 'bad1')!.content, /^invalid arguments: .*JSON/);
    assert.equal(existsSync(join(workspace, 'broken.txt')), false);
    assert.equal(client.frames.find((f) => f.event === 'tool.result' && f.tool === 'write_file')?.ok, false);
    client.close();
  });

  test('anthropic: the same for tool input that is not JSON', async () => {
    const anthropic = await startFakeAnthropic({ apiKey: 'sk-ant-test-key-abcdef123456' });
    cleanups.push(() => anthropic.close());
    const svc = await service({ provider: 'anthropic', base_url: anthropic.url, api_key: 'sk-ant-test-key-abcdef123456', model: 'claude-fake-2', permission_mode: 'allow' });
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    anthropic.script({ tool_uses: [{ id: 'toolu_bad', name: 'read_file', input: '{"path": "a' }] }, (request) => {
      const last = withoutNote(request.body.messages as { role: string }[]).at(-1) as unknown as {
        role: string;
        content: { type: string; tool_use_id?: string; content?: unknown; is_error?: boolean }[];
      };
      const result = last.content.find((block) => block.type === 'tool_result');
      return { text: `result: ${JSON.stringify(result)}` };
    });
    const reply = await client.request({ type: 'chat', message: 'go' }, 20_000);
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    assert.match((reply.data as { response: string }).response, /toolu_bad.*invalid arguments: /);
    client.close();
  });
});

describe("the service's own data directory inside the workspace", { skip: !posix }, () => {
  // `serve` run from the home directory: workspace = ~, data = ~/.config/remote-assistant. A model
  // steered by untrusted text (an opted-in webhook account, a file it read) must not read the access
  // token and api_key, nor rewrite service.json, through the file tools.
  test('file tools refuse to read, search, list or write it, even through a symbolic link', async () => {
    const home = await tempDir('ra-home-');
    cleanups.push(home.cleanup);
    const dataDir = join(home.dir, '.config', 'remote-assistant');
    await mkdir(dataDir, { recursive: true });
    await symlink(dataDir, join(home.dir, 'settings-link'));
    const svc = await startService({ base_url: fake.url, workspace: home.dir, permission_mode: 'allow' }, { dataDir, permissionTimeoutMs: 1_000 });
    cleanups.push(() => svc.dispose());
    const before = await readFile(join(dataDir, 'service.json'), 'utf8');
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    fake.script(
      {
        tool_calls: [
          { name: 'read_file', arguments: { path: '.config/remote-assistant/service.json' } },
          { name: 'read_file', arguments: { path: 'settings-link/service.json' } },
          { name: 'search_files', arguments: { pattern: 'auth_token|api_key|sk-test' } },
          { name: 'search_files', arguments: { pattern: 'test-access-token', path: '.config/remote-assistant' } },
          { name: 'list_directory', arguments: { path: '.config/remote-assistant' } },
          { name: 'edit_file', arguments: { path: '.config/remote-assistant/service.json', old_string: 'test-access-token', new_string: 'x' } },
          { name: 'write_file', arguments: { path: 'settings-link/service.json', content: '{"permission_mode":"allow"}' } },
        ],
      },
      (request) => ({ text: toolResultsIn(request).join(' | ') }),
    );
    const reply = await client.request({ type: 'chat', message: 'read the settings', id: 'datadir' }, 20_000);
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    const response = (reply.data as { response: string }).response;
    assert.doesNotMatch(response, new RegExp(svc.token));
    assert.doesNotMatch(response, /sk-test-secret/);
    assert.doesNotMatch(response, /service\.log|service\.db/, 'the folder is not listed either');
    assert.equal((response.match(/data directory/g) ?? []).length, 6, response);
    assert.equal(await readFile(join(dataDir, 'service.json'), 'utf8'), before);
    client.close();
  });

  test("a prompt's preview does not show it either (an overwrite's diff would hold the old file)", async () => {
    const home = await tempDir('ra-home-');
    cleanups.push(home.cleanup);
    const dataDir = join(home.dir, '.config', 'remote-assistant');
    await mkdir(dataDir, { recursive: true });
    const svc = await startService({ base_url: fake.url, workspace: home.dir, permission_mode: 'ask' }, { dataDir, permissionTimeoutMs: 5_000 });
    cleanups.push(() => svc.dispose());
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    const calls = [
      { name: 'write_file', arguments: { path: '.config/remote-assistant/service.json', content: '{}' } },
      { name: 'edit_file', arguments: { path: '.config/remote-assistant/service.json', old_string: 'auth_token', new_string: 'x' } },
    ];
    fake.script({ tool_calls: calls }, { text: 'done' });
    const chat = client.request({ type: 'chat', message: 'tidy the settings', id: 'preview-datadir' }, 20_000);
    for (const call of calls) {
      const request = (await client.next((f) => f.event === 'permission.request' && f.tool === call.name)) as { request_id: string; preview?: { kind: string } };
      const text = JSON.stringify(request);
      assert.doesNotMatch(text, new RegExp(svc.token), `${call.name}: the token is not in the prompt`);
      assert.doesNotMatch(text, /sk-test-secret/, `${call.name}: nor the api_key`);
      assert.equal(request.preview?.kind, 'error', `${call.name}: the preview says the call would fail: ${text}`);
      await client.request({ type: 'permission_response', request_id: request.request_id, decision: 'deny' });
    }
    assert.equal((await chat).status, 'ok');
    client.close();
  });
});

describe('allow rules against an interactive shell (the editor runs run_command lines in its terminal)', { skip: !posix || !existsSync('/bin/bash') }, () => {
  // An interactive bash or zsh expands `!` (history) before parsing: `!!:gs/"// #"` re-runs the last
  // line with its quotes removed, so a quoted `;` allowed as text becomes a command separator.
  test('history expansion cannot turn an allowed quoted ";" into a second command', async () => {
    const dir = await tempDir('ra-history-');
    cleanups.push(dir.cleanup);
    const pwned = join(dir.dir, 'pwned');
    const gate = new PermissionGate(
      () => ({ permission_mode: 'deny', permission_rules: { allow: ['run_command:echo *'], deny: [] } }),
      async () => ({ decision: 'deny', reason: 'answered' }),
    );
    const lines = [`echo "x; touch ${pwned}"`, 'echo !!:gs/"// #"'];
    const allowed: string[] = [];
    for (const command of lines) {
      const verdict = await gate.check({ conversationId: 'c', source: 'editor', tool: 'run_command', arguments: { command }, subject: command, signal: new AbortController().signal });
      if (verdict.decision !== 'deny') allowed.push(command);
    }
    assert.deepEqual(allowed.slice(0, 1), lines.slice(0, 1), 'the rule still allows a quoted ";" as text');
    const shell = spawn('/bin/bash', ['--norc', '-i'], { cwd: dir.dir, env: { ...process.env, HISTFILE: '/dev/null', PS1: '' }, stdio: ['pipe', 'ignore', 'ignore'] });
    shell.stdin.end(`${allowed.join('\n')}\nexit\n`);
    await new Promise((resolve) => shell.on('exit', resolve));
    assert.equal(existsSync(pwned), false, `allowed lines: ${JSON.stringify(allowed)}`);
  });
});
