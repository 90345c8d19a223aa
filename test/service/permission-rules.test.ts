import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { hashPassword } from '../../src/transport/auth/passwords';
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest } from '../helpers/fake-openai';
import { postJson, startService, type RunningService } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

// Permission rules "from anywhere" (issue 11): readable in get_config, writable by the owner through
// update_config, validated all or nothing.
const PASSWORD = 'correct horse battery staple';
const INITIAL_RULES = { allow: ['read_file', 'run_command:git status*'], deny: ['run_command:rm *'] };
let svc: RunningService;
let owner: TestClient;
let user: TestClient;

before(async () => {
  svc = await startService({
    users: [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }],
    permission_mode: 'ask',
    permission_rules: INITIAL_RULES,
    permission_timeout_seconds: 900,
  });
  const login = await postJson(`${svc.httpUrl}/auth`, { username: 'ada', password: PASSWORD });
  owner = await TestClient.authed(svc.wsUrl, svc.token);
  user = await TestClient.authed(svc.wsUrl, (login.body!.data as { token: string }).token);
});
after(async () => {
  owner?.close();
  user?.close();
  await svc?.dispose();
});

const lastToolResult = (request: RecordedRequest) => (request.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').at(-1)?.content;
const configText = () => readFile(join(svc.dataDir, 'service.json'), 'utf8');
const configOnDisk = async () => JSON.parse(await configText()) as Record<string, unknown>;

describe('permission rules in get_config and update_config', () => {
  test('get_config shows permission_rules and permission_timeout_seconds, to session users too', async () => {
    for (const client of [owner, user]) {
      const data = (await client.request({ type: 'get_config' })).data as Record<string, unknown>;
      assert.deepEqual(data.permission_rules, INITIAL_RULES);
      assert.equal(data.permission_timeout_seconds, 900);
    }
  });

  test('the owner replaces the rules as a whole; service.json holds them; config.changed names them', async () => {
    const rules = { allow: ['list_directory', 'run_command:npm test'], deny: [] };
    const reply = await owner.request({ type: 'update_config', config: { permission_rules: rules, permission_timeout_seconds: 60 } });
    assert.equal(reply.status, 'ok', JSON.stringify(reply));
    assert.deepEqual((reply.data as { updated_fields: string[] }).updated_fields.sort(), ['permission_rules', 'permission_timeout_seconds']);
    const changed = await user.next((f) => f.event === 'config.changed' && (f.fields as string[]).includes('permission_rules'));
    assert.ok((changed.fields as string[]).includes('permission_timeout_seconds'));
    const file = await configOnDisk();
    assert.deepEqual(file.permission_rules, rules);
    assert.equal(file.permission_timeout_seconds, 60);
    assert.deepEqual(((await user.request({ type: 'get_config' })).data as Record<string, unknown>).permission_rules, rules);
  });

  const invalid: [string, unknown, RegExp][] = [
    ['an empty rule', { allow: ['read_file', ''], deny: [] }, /permission_rules\.allow\.1.*empty/],
    ['a rule whose tool part is not a tool name glob', { allow: ['read file:x'], deny: [] }, /permission_rules\.allow\.0.*tool name/],
    ['a rule with an empty tool part', { allow: [], deny: [':rm *'] }, /permission_rules\.deny\.0.*tool name/],
    ['a rule that is not a string', { allow: [42], deny: [] }, /permission_rules\.allow\.0/],
    ['a rule over 2000 characters', { allow: [`run_command:echo ${'x'.repeat(2000)}`], deny: [] }, /permission_rules\.allow\.0.*2000/],
    ['more than 500 rules', { allow: Array.from({ length: 300 }, (_, i) => `t${i}`), deny: Array.from({ length: 201 }, (_, i) => `d${i}`) }, /permission_rules.*500/],
    ['a missing list', { allow: ['read_file'] }, /permission_rules\.deny/],
    ['an unknown list', { allow: [], deny: [], maybe: ['x'] }, /permission_rules.*maybe/],
  ];
  for (const [what, rules, named] of invalid) {
    test(`update_config refuses ${what}, naming it, and writes nothing (the valid field beside it neither)`, async () => {
      const before = await configText();
      const reply = await owner.request({ type: 'update_config', config: { permission_mode: 'deny', permission_rules: rules } });
      assert.equal(reply.status, 'error');
      assert.equal(reply.code, 'invalid_request');
      assert.match(String(reply.error), named);
      assert.equal(await configText(), before);
    });
  }

  for (const timeout of [0, -5, 1.5, '60', null]) {
    test(`update_config refuses permission_timeout_seconds ${JSON.stringify(timeout)}`, async () => {
      const before = await configText();
      const reply = await owner.request({ type: 'update_config', config: { permission_timeout_seconds: timeout } });
      assert.equal(reply.code, 'invalid_request', JSON.stringify(reply));
      assert.match(String(reply.error), /permission_timeout_seconds/);
      assert.equal(await configText(), before);
    });
  }

  for (const patch of [{ permission_rules: { allow: ['*'], deny: [] } }, { permission_timeout_seconds: 86_400 }]) {
    test(`a session user may not write ${Object.keys(patch)[0]}`, async () => {
      const before = await configText();
      const reply = await user.request({ type: 'update_config', config: patch });
      assert.equal(reply.code, 'unauthorized', JSON.stringify(reply));
      assert.match(String(reply.error), new RegExp(Object.keys(patch)[0]));
      assert.equal(await configText(), before);
    });
  }
});

describe('allow_always', () => {
  let fake: FakeOpenAI;
  let live: RunningService;
  let workspace: { dir: string; cleanup: () => Promise<void> };
  let chatter: TestClient;
  let sessionUser: TestClient;
  let watcher: TestClient;

  before(async () => {
    fake = await startFakeOpenAI();
    workspace = await tempDir('ra-rules-workspace-');
    live = await startService({
      base_url: fake.url,
      workspace: workspace.dir,
      permission_mode: 'ask',
      users: [{ username: 'ada', password_hash: await hashPassword(PASSWORD) }],
      permission_rules: { allow: ['read_file'], deny: ['run_command:rm *'] },
    });
    const login = await postJson(`${live.httpUrl}/auth`, { username: 'ada', password: PASSWORD });
    chatter = await TestClient.authed(live.wsUrl, live.token);
    watcher = await TestClient.authed(live.wsUrl, live.token);
    sessionUser = await TestClient.authed(live.wsUrl, (login.body!.data as { token: string }).token);
  });
  after(async () => {
    for (const client of [chatter, watcher, sessionUser]) client?.close();
    await live?.dispose();
    await fake?.close();
    await workspace?.cleanup();
  });

  const rulesOnDisk = async () => (JSON.parse(await readFile(join(live.dataDir, 'service.json'), 'utf8')) as { permission_rules: { allow: string[]; deny: string[] } }).permission_rules;
  const runCommand = (command: string) => fake.script({ tool_calls: [{ name: 'run_command', arguments: { command } }] }, (request) => ({ text: `got: ${lastToolResult(request)}` }));

  test("the owner's allow_always writes the narrowest rule to service.json, then the call runs; the same line later runs unasked, another still asks", async () => {
    runCommand('echo always-ok');
    chatter.send({ type: 'chat', message: 'run it', id: 'a1' });
    const request = await chatter.next((f) => f.event === 'permission.request');
    const ack = await chatter.request({ type: 'permission_response', request_id: request.request_id, decision: 'allow_always' });
    assert.equal(ack.status, 'ok', JSON.stringify(ack));
    assert.equal((ack.data as { rule_added?: string }).rule_added, 'run_command:echo always-ok');
    const resolved = await watcher.next((f) => f.event === 'permission.resolved' && f.request_id === request.request_id);
    assert.equal(resolved.decision, 'allow_always');
    assert.equal(resolved.rule_added, 'run_command:echo always-ok');
    const reply = await chatter.next((f) => f.id === 'a1' && 'status' in f);
    assert.match((reply.data as { response: string }).response, /got: .*always-ok/);
    assert.deepEqual(await rulesOnDisk(), { allow: ['read_file', 'run_command:echo always-ok'], deny: ['run_command:rm *'] });
    const changed = await watcher.next((f) => f.event === 'config.changed');
    assert.deepEqual(changed.fields, ['permission_rules']);

    runCommand('echo always-ok');
    const again = await chatter.request({ type: 'chat', message: 'run it again', id: 'a2' });
    assert.match((again.data as { response: string }).response, /got: .*always-ok/);
    assert.equal(chatter.frames.filter((f) => f.event === 'permission.request').length, 0, 'not asked for the same line');

    runCommand('echo always-ok; echo sneaky');
    chatter.send({ type: 'chat', message: 'run a longer one', id: 'a3' });
    const other = await chatter.next((f) => f.event === 'permission.request');
    assert.equal((other.arguments as { command: string }).command, 'echo always-ok; echo sneaky');
    await chatter.request({ type: 'permission_response', request_id: other.request_id, decision: 'deny' });
    const denied = await chatter.next((f) => f.id === 'a3' && 'status' in f);
    assert.match((denied.data as { response: string }).response, /Permission denied/);
  });

  test('with 500 rules already, allow_always still runs the call once; service.json keeps its rules', async () => {
    const full = { allow: Array.from({ length: 499 }, (_, i) => `tool_${i}`), deny: ['run_command:rm *'] };
    assert.equal((await chatter.request({ type: 'update_config', config: { permission_rules: full } })).status, 'ok');
    runCommand('echo over-the-limit');
    chatter.send({ type: 'chat', message: 'run it', id: 'f1' });
    const request = await chatter.next((f) => f.event === 'permission.request');
    assert.equal((await chatter.request({ type: 'permission_response', request_id: request.request_id, decision: 'allow_always' })).status, 'ok');
    const reply = await chatter.next((f) => f.id === 'f1' && 'status' in f);
    assert.match((reply.data as { response: string }).response, /got: .*over-the-limit/);
    assert.deepEqual(await rulesOnDisk(), full);
    await waitFor(async () => (await readFile(join(live.dataDir, 'service.log'), 'utf8')).includes('permission.rule_not_saved'), 'the log line');
  });

  test('attack: allow_always on a call whose arguments give no subject (command: []) adds no rule, not the bare tool name', async () => {
    // run_command judges a call by its command line; a model's call without one (an empty or non-string
    // command, which would fail anyway) made narrowestRule fall back to `run_command`: every command line,
    // forever, on one click of "always" for a call that does nothing.
    const before = await rulesOnDisk();
    for (const command of [[], 42]) {
      fake.script({ tool_calls: [{ name: 'run_command', arguments: { command } }] }, (request) => ({ text: `got: ${lastToolResult(request)}` }));
      chatter.send({ type: 'chat', message: 'run it', id: `n${String(command)}` });
      const request = await chatter.next((f) => f.event === 'permission.request' && JSON.stringify((f.arguments as { command: unknown }).command) === JSON.stringify(command));
      const ack = await chatter.request({ type: 'permission_response', request_id: request.request_id, decision: 'allow_always' });
      assert.equal(ack.status, 'ok', JSON.stringify(ack));
      assert.equal((ack.data as { rule_added?: string }).rule_added, undefined, 'no rule named');
      await chatter.next((f) => f.id === `n${String(command)}` && 'status' in f);
      assert.deepEqual(await rulesOnDisk(), before, 'no rule written');
    }
  });

  test('a session user may not answer allow_always: unauthorized, no rule written, the request still waits', async () => {
    const before = await rulesOnDisk();
    runCommand('echo from-a-session');
    chatter.send({ type: 'chat', message: 'run it', id: 'u1' });
    const asked = await chatter.next((f) => f.event === 'permission.request');
    const request = await sessionUser.next((f) => f.event === 'permission.request' && f.request_id === asked.request_id);
    const refused = await sessionUser.request({ type: 'permission_response', request_id: request.request_id, decision: 'allow_always' });
    assert.equal(refused.code, 'unauthorized', JSON.stringify(refused));
    assert.match(String(refused.error), /allow_always/);
    assert.deepEqual(await rulesOnDisk(), before);
    const ack = await sessionUser.request({ type: 'permission_response', request_id: request.request_id, decision: 'allow' });
    assert.equal(ack.status, 'ok', 'the request was still waiting');
    assert.equal((ack.data as { rule_added?: string }).rule_added, undefined);
    const reply = await chatter.next((f) => f.id === 'u1' && 'status' in f);
    assert.match((reply.data as { response: string }).response, /from-a-session/);
    assert.deepEqual(await rulesOnDisk(), before);
  });
});
