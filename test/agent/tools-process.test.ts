import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { createBuiltinToolSource } from '../../src/agent/tools/builtin/index';
import { DEFAULT_OUTPUT_CAP_BYTES } from '../../src/agent/tools/capped-output';
import { formatBytes } from '../../src/agent/tools/text-files';
import { createCustomToolSource, type CustomToolConfig } from '../../src/agent/tools/custom';
import { ToolError, type Tool, type ToolOutput } from '../../src/agent/tools/types';

// The sleeps below (an hour) outlive this limit: a call that returns at all did not wait for them.
const LIMIT = { timeout: 30_000 };
// Commands here are POSIX shell; the Windows path (cmd.exe, taskkill) is not exercised by these tests.
const skip = process.platform === 'win32' ? 'POSIX shell commands' : false;

async function workspace(t: TestContext): Promise<{ ws: string; outside: string }> {
  const base = await realpath(await mkdtemp(path.join(tmpdir(), 'tools-proc-')));
  t.after(() => rm(base, { recursive: true, force: true }));
  const ws = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  await mkdir(ws);
  await mkdir(outside);
  return { ws, outside };
}

async function runCommandTool(ws: string): Promise<Tool> {
  const tools = await createBuiltinToolSource({ workspaceRoots: () => [ws] }).tools();
  return tools.find((tool) => tool.name === 'run_command')!;
}

function call(tool: Tool, args: Record<string, unknown>, signal = new AbortController().signal): Promise<ToolOutput> {
  return tool.run(args, { conversationId: 'c1', signal });
}

async function refuses(work: Promise<unknown>, message: RegExp): Promise<void> {
  await assert.rejects(work, (error: unknown) => {
    assert.ok(error instanceof ToolError, `expected a ToolError, got ${String(error)}`);
    assert.match(error.message, message);
    return true;
  });
}

/** Alive, and not a zombie left for an init that does not reap (as in some containers). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return !existsSync('/proc/self');
  }
}

async function pidsIn(file: string): Promise<number[]> {
  return (await readFile(file, 'utf8')).split('\n').filter(Boolean).map(Number);
}

async function eventually(check: () => boolean, ms = 2000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

// ---------------------------------------------------------------------------------------------
// run_command

test('run_command: a string runs through the shell; output and exit code come back', { ...LIMIT, skip }, async (t) => {
  const { ws } = await workspace(t);
  const tool = await runCommandTool(ws);
  const ok = await call(tool, { command: 'echo one && echo two | cat; printf "%s" "$((6*7))"' });
  assert.equal(ok.content, 'one\ntwo\n42\n[exit code 0]');
  assert.equal(ok.isError, false);

  const failed = await call(tool, { command: 'echo before; exit 3' });
  assert.equal(failed.content, 'before\n[exit code 3]');
  assert.equal(failed.isError, true);

  assert.equal((await call(tool, { command: 'true' })).content, '(no output)\n[exit code 0]');
  // stdout and stderr interleaved as they come.
  const mixed = await call(tool, { command: 'echo out1; sleep 0.1; echo err1 >&2; sleep 0.1; echo out2' });
  assert.equal(mixed.content, 'out1\nerr1\nout2\n[exit code 0]');
  // No input: a command that reads stdin gets end of file at once.
  assert.equal((await call(tool, { command: 'cat; echo done' })).content, 'done\n[exit code 0]');
});

test('run_command: an array runs as argv without a shell, so nothing in it is interpreted', { ...LIMIT, skip }, async (t) => {
  const { ws } = await workspace(t);
  const tool = await runCommandTool(ws);
  const out = await call(tool, { command: ['printf', '[%s]\n', 'a b', '$(touch PWNED)', '; touch PWNED', '`touch PWNED`', '*'] });
  assert.equal(out.content, '[a b]\n[$(touch PWNED)]\n[; touch PWNED]\n[`touch PWNED`]\n[*]\n[exit code 0]');
  assert.deepEqual(await readdir(ws), []);
  await refuses(call(tool, { command: ['no-such-program-xyz'] }), /could not start no-such-program-xyz/);
  await refuses(call(tool, { command: [] }), /argument command must be a string \| string\[\]/);
  await refuses(call(tool, { command: '  ' }), /command is empty/);
  await refuses(call(tool, { command: 'true', timeout_seconds: -1 }), /timeout_seconds must be between/);
});

test('run_command: cwd is confined to the workspace', { ...LIMIT, skip }, async (t) => {
  const { ws, outside } = await workspace(t);
  await mkdir(path.join(ws, 'sub'));
  const tool = await runCommandTool(ws);
  assert.equal((await call(tool, { command: 'pwd' })).content, `${ws}\n[exit code 0]`);
  assert.equal((await call(tool, { command: ['pwd'], cwd: 'sub' })).content, `${path.join(ws, 'sub')}\n[exit code 0]`);
  await refuses(call(tool, { command: 'touch PWNED', cwd: '..' }), /path \.\. is outside the workspace/);
  await refuses(call(tool, { command: 'touch PWNED', cwd: outside }), /is outside the workspace/);
  await refuses(call(tool, { command: 'true', cwd: 'missing' }), /missing does not exist/);
  assert.deepEqual(await readdir(outside), []);
});

test('run_command: on timeout the whole process group is killed, within the time limit', { ...LIMIT, skip }, async (t) => {
  const { ws } = await workspace(t);
  const tool = await runCommandTool(ws);

  // The sleep outlives the test's own time limit: returning at all shows it was not waited for (the kill is checked below).
  const out = await call(tool, { command: 'echo $$ > pids; sleep 3600 & echo $! >> pids; echo started; wait', timeout_seconds: 1 });
  assert.equal(out.content, 'started\n[timed out after 1 s: the command and every process it started were killed]');
  assert.equal(out.isError, true);
  const pids = await pidsIn(path.join(ws, 'pids'));
  assert.equal(pids.length, 2);
  for (const pid of pids) assert.ok(await eventually(() => !alive(pid)), `process ${pid} is gone`);

  // A shell in a shell, its sleep a grandchild.
  const nested = await call(tool, { command: ['sh', '-c', 'sh -c "sleep 3600 & echo \\$! > inner; wait"'], timeout_seconds: 0.5 });
  assert.match(nested.content, /timed out after 0\.5 s/);
  const [inner] = await pidsIn(path.join(ws, 'inner'));
  assert.ok(await eventually(() => !alive(inner)), 'the grandchild sleep is gone');
});

test('run_command: aborting the signal kills the command at once', { ...LIMIT, skip }, async (t) => {
  const { ws } = await workspace(t);
  const tool = await runCommandTool(ws);
  const controller = new AbortController();
  const running = call(tool, { command: 'sh -c "sleep 3600 & echo \\$! > pid; wait"' }, controller.signal);
  await eventually(() => existsSync(path.join(ws, 'pid')) && readFileSync(path.join(ws, 'pid'), 'utf8').endsWith('\n'));
  controller.abort();
  const out = await running;
  assert.equal(out.content, '(no output)\n[cancelled: the command and every process it started were killed]');
  const [pid] = await pidsIn(path.join(ws, 'pid'));
  assert.ok(await eventually(() => !alive(pid)), 'sleep is gone');

  const already = new AbortController();
  already.abort();
  assert.match((await call(tool, { command: 'touch ran' }, already.signal)).content, /cancelled/);
  assert.equal(existsSync(path.join(ws, 'ran')), false);
});

test('run_command: background processes do not outlive the command', { ...LIMIT, skip }, async (t) => {
  const { ws } = await workspace(t);
  const tool = await runCommandTool(ws);
  const out = await call(tool, { command: 'sleep 3600 > /dev/null 2>&1 & echo $! > pid; echo bye' });
  assert.equal(out.content, 'bye\n[exit code 0]');
  const [pid] = await pidsIn(path.join(ws, 'pid'));
  assert.ok(await eventually(() => !alive(pid)), 'background sleep is gone');

  // One that keeps the output pipe open: the call still ends soon after the command does.
  const holding = await call(tool, { command: 'sleep 3600 & echo held' });
  assert.equal(holding.content, 'held\n[exit code 0]');
});

test(
  'run_command: processes that leave the session with setsid are killed too (exit, timeout, cancel)',
  { ...LIMIT, skip: skip || process.platform !== 'linux' ? 'Linux: found through /proc' : false },
  async (t) => {
    const { ws } = await workspace(t);
    const tool = await runCommandTool(ws);
    // Exit: a daemon-like child in its own session, even one that detaches twice.
    const out = await call(tool, { command: 'setsid sleep 300 > /dev/null 2>&1 & echo $! > exit-pid; setsid sh -c "setsid sleep 301 > /dev/null 2>&1 & echo \\$! > exit-pid2" ; echo bye' });
    assert.match(out.content, /^bye\n\[exit code 0\]/);
    const escaped = [...(await pidsIn(path.join(ws, 'exit-pid'))), ...(await pidsIn(path.join(ws, 'exit-pid2')))];
    assert.equal(escaped.length, 2);
    for (const pid of escaped) assert.ok(await eventually(() => !alive(pid)), `setsid process ${pid} is gone after the command exited`);

    // Timeout.
    const timed = await call(tool, { command: 'setsid sleep 302 > /dev/null 2>&1 & echo $! > timeout-pid; sleep 3600', timeout_seconds: 0.5 });
    assert.match(timed.content, /timed out/);
    const [timedPid] = await pidsIn(path.join(ws, 'timeout-pid'));
    assert.ok(await eventually(() => !alive(timedPid)), 'gone after the timeout');

    // Cancel.
    const controller = new AbortController();
    const running = call(tool, { command: 'setsid sleep 303 > /dev/null 2>&1 & echo $! > cancel-pid; sleep 3600' }, controller.signal);
    await eventually(() => existsSync(path.join(ws, 'cancel-pid')) && readFileSync(path.join(ws, 'cancel-pid'), 'utf8').endsWith('\n'));
    controller.abort();
    assert.match((await running).content, /cancelled/);
    const [cancelledPid] = await pidsIn(path.join(ws, 'cancel-pid'));
    assert.ok(await eventually(() => !alive(cancelledPid)), 'gone after the cancel');
  },
);

test('run_command: output is capped, keeping its beginning and its end', { ...LIMIT, skip }, async (t) => {
  const { ws } = await workspace(t);
  const tool = await runCommandTool(ws);
  const out = await call(tool, { command: 'echo START; head -c 300000 /dev/zero | tr "\\0" "x"; echo; echo END' });
  assert.ok(out.content.startsWith('START\nxxx'));
  assert.ok(out.content.endsWith('xxx\nEND\n[exit code 0]'));
  const total = 'START\n'.length + 300_000 + '\nEND\n'.length;
  assert.ok(out.content.includes(`\n[... ${formatBytes(total - DEFAULT_OUTPUT_CAP_BYTES)} of output cut (${formatBytes(total)} in all) ...]\n`));
  assert.ok(out.content.length < DEFAULT_OUTPUT_CAP_BYTES + 200, `${out.content.length} characters`);
});

// ---------------------------------------------------------------------------------------------
// Custom tools

const INJECTIONS = ['; touch PWNED', '$(touch PWNED)', '`touch PWNED`', '&& touch PWNED', 'a\ntouch PWNED', '| touch PWNED', "' ; touch PWNED ; '", '" ; touch PWNED ; "', '> PWNED', '*'];

async function customTools(t: TestContext, config: CustomToolConfig[]) {
  const { ws, outside } = await workspace(t);
  const source = createCustomToolSource(() => config, { workspaceRoots: () => [ws] });
  const byName = async (name: string) => (await source.tools()).find((tool) => tool.name === name)!;
  return { ws, outside, byName };
}

const tool = (name: string, parameters: CustomToolConfig['parameters'], command: string[], extra: Partial<CustomToolConfig> = {}): CustomToolConfig => ({
  name,
  description: `${name} tool`,
  parameters,
  command,
  ...extra,
});

test('custom tools: arguments fill argv items, never a shell, so injection attempts are inert', { ...LIMIT, skip }, async (t) => {
  const c = await customTools(t, [
    tool('echo_text', { text: 'string' }, ['printf', '%s\n', '{text}']),
    tool('via_sh', { text: 'string' }, ['sh', '-c', 'printf "%s\\n" "$1"', 'sh', '{text}']),
    tool('framed', { text: 'string' }, ['printf', '%s\n', '<{text}>', '{{text}}', '${HOME:+home}']),
  ]);
  const echo = await c.byName('echo_text');
  const viaSh = await c.byName('via_sh');
  for (const attempt of INJECTIONS) {
    assert.equal((await call(echo, { text: attempt })).content, `${attempt}\n[exit code 0]`, attempt);
    assert.equal((await call(viaSh, { text: attempt })).content, `${attempt}\n[exit code 0]`, attempt);
  }
  const framed = await call(await c.byName('framed'), { text: '$(touch PWNED)' });
  assert.equal(framed.content, '<$(touch PWNED)>\n{text}\n${HOME:+home}\n[exit code 0]');
  assert.deepEqual(await readdir(c.ws), [], 'no PWNED file in the workspace');
  assert.equal(existsSync(path.join(process.cwd(), 'PWNED')), false);
  // The subject (rules, prompts) is the arguments, newlines shown escaped; not the admin's command line.
  assert.equal(echo.subject!({ text: '; touch PWNED' }), `text='; touch PWNED'`);
  assert.equal(echo.subject!({ text: "it's\ntouch PWNED" }), `text=$'it\\'s\\ntouch PWNED'`);
  assert.equal(echo.subject!({ text: 5 }), undefined, 'no subject for arguments that fail the check');
});

test('custom tools: an argument cannot become an option of the program unless the parameter allows it', { ...LIMIT, skip }, async (t) => {
  const c = await customTools(t, [
    tool('sorter', { file: 'string' }, ['sort', '{file}']),
    tool('sorter_dashdash', { file: 'string' }, ['sort', '--', '{file}']),
    tool('framed', { text: 'string' }, ['printf', '%s\n', 'text={text}']),
    tool('sorter_opts', { flags: { type: 'string', allow_options: true } }, ['sort', '{flags}', 'in.txt']),
    tool('counter', { n: 'number' }, ['printf', '%s\n', '{n}']),
  ]);
  const victim = path.join(c.outside, 'victim.txt');
  await writeFile(victim, 'precious\n');
  await writeFile(path.join(c.ws, 'in.txt'), 'b\na\n');
  const sorter = await c.byName('sorter');
  for (const file of [`-o${victim}`, `--output=${victim}`, '-', '--help']) {
    await refuses(call(sorter, { file }), /sorter: argument file starts with "-", so .* would read it as an option/);
  }
  assert.equal(await readFile(victim, 'utf8'), 'precious\n', 'the file outside was not truncated');
  await refuses(call(await c.byName('counter'), { n: -1 }), /argument n starts with "-"/);
  // After `--`, inside an item, or where the admin allowed options, a leading dash is fine.
  assert.match((await call(await c.byName('sorter_dashdash'), { file: `-o${victim}` })).content, /No such file|cannot read/);
  assert.equal(await readFile(victim, 'utf8'), 'precious\n');
  assert.equal((await call(await c.byName('framed'), { text: '-o x' })).content, 'text=-o x\n[exit code 0]');
  assert.equal((await call(await c.byName('sorter_opts'), { flags: '-r' })).content, 'b\na\n[exit code 0]');
  assert.deepEqual((await c.byName('sorter_opts')).parameters, { flags: 'string' });
});

test('custom tools: arguments are type-checked; missing ones and unknown placeholders are named', { ...LIMIT, skip }, async (t) => {
  const c = await customTools(t, [
    tool('typed', { name: 'string', count: 'number', loud: 'boolean' }, ['printf', '%s|%s|%s\n', '{name}', '{count}', '{loud}']),
    tool('broken', { a: 'string' }, ['printf', '%s %s', '{a}', '{b}']),
  ]);
  const typed = await c.byName('typed');
  assert.equal((await call(typed, { name: 'x', count: 2.5, loud: false })).content, 'x|2.5|false\n[exit code 0]');
  await refuses(call(typed, { name: 'x', count: '2', loud: false }), /typed: argument count must be a number, got a string \("2"\)/);
  await refuses(call(typed, { name: 'x', count: 2, loud: 'yes' }), /argument loud must be a boolean/);
  await refuses(call(typed, { name: 5, count: 2, loud: true }), /argument name must be a string, got a number/);
  await refuses(call(typed, { name: 'x', loud: true }), /typed: missing required argument count \(number\)/);
  await refuses(call(typed, { name: 'x', count: 1, loud: true, extra: 1 }), /unknown argument extra/);
  await refuses(call(await c.byName('broken'), { a: 'x' }), /custom tool broken is misconfigured: its command uses \{b\}, which is not a parameter \(parameters: a\)/);
  assert.deepEqual((await c.byName('typed')).parameters, { name: 'string', count: 'number', loud: 'boolean' });
  assert.deepEqual((await c.byName('typed')).inputSchema.required, ['name', 'count', 'loud']);
});

test('custom tools: run in the first workspace folder, with their own timeout and the output cap', { ...LIMIT, skip }, async (t) => {
  const c = await customTools(t, [
    tool('where', {}, ['pwd']),
    tool('slow', {}, ['sh', '-c', 'sleep 3600 & echo $! > pid; wait'], { timeout_seconds: 0.5 }),
    tool('loud', {}, ['sh', '-c', 'head -c 200000 /dev/zero | tr "\\0" "y"']),
    tool('fails', {}, ['sh', '-c', 'echo oops >&2; exit 7']),
  ]);
  assert.equal((await call(await c.byName('where'), {})).content, `${c.ws}\n[exit code 0]`);

  const slow = await call(await c.byName('slow'), {});
  assert.match(slow.content, /timed out after 0\.5 s/);
  const [pid] = await pidsIn(path.join(c.ws, 'pid'));
  assert.ok(await eventually(() => !alive(pid)));

  const loud = await call(await c.byName('loud'), {});
  assert.match(loud.content, /of output cut/);
  assert.ok(loud.content.length < DEFAULT_OUTPUT_CAP_BYTES + 200);

  const fails = await call(await c.byName('fails'), {});
  assert.equal(fails.content, 'oops\n[exit code 7]');
  assert.equal(fails.isError, true);
});
