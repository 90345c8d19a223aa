import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import type { Logger, LogFields, LogLevel } from '../../src/log/logger';
import { contentOf, createMcpToolSource, parameterTypes, type McpServerConfig, type McpToolSourceOptions } from '../../src/agent/tools/mcp';
import type { Tool, ToolSource } from '../../src/agent/tools/types';
import { tempDir, waitFor } from '../helpers/temp';

const SERVER = join(__dirname, '..', 'helpers', 'mcp-server.mjs');

interface Line {
  level: LogLevel;
  event: string;
  fields: LogFields;
}

function recordingLogger(lines: Line[] = []): Logger & { lines: Line[] } {
  const at =
    (level: LogLevel) =>
    (event: string, fields: LogFields = {}) =>
      void lines.push({ level, event, fields });
  const logger = { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => logger };
  return logger;
}

/** A temp dir for pid files, and a source that is closed (and the dir removed) when the test ends. */
async function setup(t: TestContext, servers: (dir: string) => Record<string, McpServerConfig> | (() => Record<string, McpServerConfig>), options: McpToolSourceOptions = {}) {
  const temp = await tempDir('ra-mcp-');
  const logger = recordingLogger();
  const config = servers(temp.dir);
  const source = createMcpToolSource(typeof config === 'function' ? config : () => config, { logger, ...options });
  t.after(async () => {
    await source.close?.();
    await temp.cleanup();
  });
  return { dir: temp.dir, logger, source };
}

function server(dir: string, label: string, mode = 'normal', extra: Partial<McpServerConfig> = {}): McpServerConfig {
  return { command: process.execPath, args: [SERVER, '--dir', dir, '--label', label, '--mode', mode], ...extra };
}

/** Pids the servers (or their children) labelled `label` wrote, oldest file first. */
function pidsOf(dir: string, label: string): number[] {
  return readdirSync(dir)
    .filter((f) => f.startsWith(`${label}.`) && f.endsWith('.pid'))
    .map((f) => Number(readFileSync(join(dir, f), 'utf8')));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A killed orphan may linger as a zombie where the container's init does not reap: that is dead.
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return process.platform !== 'linux';
  }
}

function ctx(signal: AbortSignal = new AbortController().signal) {
  return { conversationId: 'c1', signal };
}

function find(tools: Tool[], name: string): Tool {
  const tool = tools.find((t) => t.name === name);
  assert.ok(tool, `${name} among ${tools.map((t) => t.name).join(', ')}`);
  return tool;
}

async function toolsOf(source: ToolSource): Promise<string[]> {
  return (await source.tools()).map((t) => t.name).sort();
}

/** Tests that show something was not waited for: what they do not wait for lasts an hour. */
const LIMIT = { timeout: 60_000 };
const HOUR = 3_600_000;

describe('MCP tool source', () => {
  test('lists each tool as <server>.<tool> with type-named parameters, and calls it', async (t) => {
    process.env.RA_TEST_SERVICE_SECRET = 'not-for-servers';
    t.after(() => delete process.env.RA_TEST_SERVICE_SECRET);
    const { source, logger } = await setup(t, (dir) => ({ calc: server(dir, 'calc', 'normal', { env: { MCP_TEST_TOKEN: 'tok-123' } }) }));
    const tools = await source.tools();
    const add = find(tools, 'calc.add');
    assert.deepEqual(add.parameters, { a: 'number', b: 'number' });
    assert.equal(add.description, 'Adds two numbers.');
    assert.equal(add.inputSchema.type, 'object');
    assert.deepEqual(Object.keys(add.inputSchema.properties as object), ['a', 'b']);
    assert.deepEqual(find(tools, 'calc.types').parameters, {
      s: 'string',
      n: 'number',
      i: 'integer',
      b: 'boolean',
      o: 'object',
      arr: 'array',
      u: 'string|number',
      maybe: 'string|null',
    });
    assert.deepEqual(find(tools, 'calc.fail').parameters, {});

    assert.deepEqual(await add.run({ a: 2, b: 40 }, ctx()), { content: '42' });
    assert.deepEqual(await find(tools, 'calc.echo').run({ text: 'héllo' }, ctx()), { content: 'héllo' });
    assert.deepEqual(await find(tools, 'calc.fail').run({}, ctx()), { content: 'it failed on purpose', isError: true });
    assert.deepEqual(await find(tools, 'calc.media').run({}, ctx()), {
      content: 'here:\n[image/png, 5 bytes]\n[resource link file:///tmp/x.txt (x.txt)]',
    });
    // The entry's env reaches the server; the service's own environment does not.
    assert.equal((await find(tools, 'calc.env').run({ name: 'MCP_TEST_TOKEN' }, ctx())).content, 'tok-123');
    assert.equal((await find(tools, 'calc.env').run({ name: 'RA_TEST_SERVICE_SECRET' }, ctx())).content, '(unset)');
    // Bad arguments are the server's to refuse: an error result, not a crash.
    const bad = await add.run({ a: 'x' }, ctx()).catch((error: Error) => ({ content: error.message, isError: true }));
    assert.equal(bad.isError, true);

    // stderr goes to the debug log, named by server; env values never reach the log.
    await waitFor(() => logger.lines.some((l) => l.level === 'debug' && l.event === 'mcp.stderr' && l.fields.server === 'calc'), 'stderr line');
    assert.ok(!JSON.stringify(logger.lines).includes('tok-123'));
  });

  test('starts a server only on first use', async (t) => {
    let asked = 0;
    const { dir, source } = await setup(t, (d) => () => {
      asked += 1;
      return { calc: server(d, 'calc') };
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(pidsOf(dir, 'calc'), [], 'no process before the first use');
    assert.equal(asked, 0);
    assert.ok((await toolsOf(source)).includes('calc.add'));
    assert.equal(pidsOf(dir, 'calc').length, 1);
    await source.tools();
    assert.equal(pidsOf(dir, 'calc').length, 1, 'one process for many uses');
  });

  test('a server that dies mid-call fails that call clearly, and is restarted on a later use (with a backoff)', async (t) => {
    const { dir, source, logger } = await setup(t, (d) => ({ calc: server(d, 'calc') }), { restartBackoffMs: 1_000 });
    const tools = await source.tools();
    const [first] = pidsOf(dir, 'calc');
    await assert.rejects(find(tools, 'calc.crash').run({}, ctx()), /MCP server "calc" exited with code 1 during the call to crash/);
    assert.ok(logger.lines.some((l) => l.level === 'warn' && l.event === 'mcp.server_exited' && l.fields.server === 'calc'));
    // It died right after starting: no respawn for a while, and a clear error meanwhile.
    await assert.rejects(find(tools, 'calc.add').run({ a: 1, b: 1 }, ctx()), /MCP server "calc" is down \(exited with code 1\); it will be restarted in 1 s/);
    assert.deepEqual(await toolsOf(source), []);
    assert.equal(pidsOf(dir, 'calc').length, 1);
    await waitFor(() => !alive(first), 'the crashed server gone');

    const result = await waitFor(
      () =>
        find(tools, 'calc.add')
          .run({ a: 1, b: 1 }, ctx())
          .catch(() => undefined),
      'the restarted server answers',
      5_000,
      100,
    );
    assert.deepEqual(result, { content: '2' });
    assert.equal(pidsOf(dir, 'calc').length, 2, 'restarted once');
    assert.ok((await toolsOf(source)).includes('calc.add'));
  });

  // The slow calls below (an hour) outlive LIMIT: a test that ends at all did not wait for them.
  test('a call longer than the request timeout fails and is cancelled on the server', LIMIT, async (t) => {
    const { dir, source } = await setup(t, (d) => ({ calc: server(d, 'calc') }), { requestTimeoutMs: 300 });
    const tools = await source.tools();
    await assert.rejects(find(tools, 'calc.slow').run({ ms: HOUR }, ctx()), /MCP server "calc" did not answer the call to slow within 0.3 s/);
    const [pid] = pidsOf(dir, 'calc');
    await waitFor(() => existsSync(join(dir, `cancelled.${pid}`)), 'the server told of the cancel');
    assert.deepEqual(await find(tools, 'calc.add').run({ a: 1, b: 2 }, ctx()), { content: '3' }, 'the server is still usable');
  });

  test('aborting the signal cancels the call promptly', LIMIT, async (t) => {
    const { dir, source } = await setup(t, (d) => ({ calc: server(d, 'calc') }));
    const tools = await source.tools();
    const controller = new AbortController();
    const call = find(tools, 'calc.slow').run({ ms: HOUR }, ctx(controller.signal));
    setTimeout(() => controller.abort(), 100);
    await assert.rejects(call, /the call to slow on MCP server "calc" was cancelled/);
    const [pid] = pidsOf(dir, 'calc');
    await waitFor(() => existsSync(join(dir, `cancelled.${pid}`)), 'the server told of the cancel');
    await assert.rejects(find(tools, 'calc.add').run({ a: 1, b: 2 }, ctx(controller.signal)), /cancelled/, 'an aborted signal stops a call before it starts');
    assert.deepEqual(await find(tools, 'calc.add').run({ a: 1, b: 2 }, ctx()), { content: '3' });
  });

  test('servers that cannot start do not hide the others, are logged by name, and are not respawned at once', LIMIT, async (t) => {
    const { dir, source, logger } = await setup(
      t,
      (d) => ({
        missing: { command: join(d, 'no-such-command'), args: ['--token', 'arg-secret'], env: { API_TOKEN: 'env-secret-value' } },
        crashy: server(d, 'crashy', 'crash-on-start'),
        mute: server(d, 'mute', 'no-init'),
        good: server(d, 'good'),
      }),
      { startTimeoutMs: 3_000, restartBackoffMs: 60_000 },
    );
    // "mute" never answers its initialize: the listing is bounded by the start timeout, not by LIMIT.
    const names = await toolsOf(source);
    assert.ok(names.includes('good.add'));
    assert.ok(
      names.every((n) => n.startsWith('good.')),
      names.join(', '),
    );
    const failures = logger.lines.filter((l) => l.level === 'warn' && l.event === 'mcp.server_failed');
    assert.deepEqual(failures.map((l) => l.fields.server).sort(), ['crashy', 'missing', 'mute']);
    assert.match(String(failures.find((l) => l.fields.server === 'missing')?.fields.error), /command not found/);
    assert.match(String(failures.find((l) => l.fields.server === 'crashy')?.fields.error), /exited with code 3 before initializing/);
    assert.match(String(failures.find((l) => l.fields.server === 'mute')?.fields.error), /no answer to initialize within 3 s/);
    const log = JSON.stringify(logger.lines);
    assert.ok(!log.includes('env-secret-value') && !log.includes('arg-secret'), 'no env or args in the log');
    // The one that never answered was killed (it ignores SIGTERM, so SIGKILL).
    const [mute] = pidsOf(dir, 'mute');
    await waitFor(() => !alive(mute), 'the mute server killed');

    // Asked again at once: no new attempt (backoff), the good server still listed.
    assert.ok((await toolsOf(source)).includes('good.add'));
    assert.equal(pidsOf(dir, 'crashy').length, 1);
    assert.equal(pidsOf(dir, 'mute').length, 1);
  });

  test('a changed or removed config entry stops the old process; the new one starts lazily', async (t) => {
    let servers: Record<string, McpServerConfig> = {};
    const { dir, source } = await setup(t, (d) => {
      servers = { calc: server(d, 'one') };
      return () => servers;
    });
    const before = await source.tools();
    const [one] = pidsOf(dir, 'one');
    assert.ok(alive(one));

    servers = { calc: server(dir, 'two') };
    assert.ok((await toolsOf(source)).includes('calc.add'));
    await waitFor(() => !alive(one), 'the old process stopped');
    const [two] = pidsOf(dir, 'two');
    assert.ok(alive(two));
    // A tool listed before the change reaches the new process.
    assert.deepEqual(await find(before, 'calc.add').run({ a: 2, b: 2 }, ctx()), { content: '4' });
    assert.deepEqual(pidsOf(dir, 'two'), [two]);

    // Same config, freshly built object: no restart.
    servers = { calc: server(dir, 'two') };
    await source.tools();
    assert.deepEqual(pidsOf(dir, 'two'), [two]);

    servers = {};
    assert.deepEqual(await toolsOf(source), []);
    await waitFor(() => !alive(two), 'the removed server stopped');
    await assert.rejects(find(before, 'calc.add').run({ a: 1, b: 1 }, ctx()), /MCP server "calc" is no longer configured/);
  });

  test("a tool the server names with a lone surrogate is listed well-formed and still calls the server's tool", async (t) => {
    const { source } = await setup(t, (d) => ({ calc: server(d, 'calc', 'lone-name') }));
    const tools = await source.tools();
    assert.ok(!tools.some((tool) => !tool.name.isWellFormed()), JSON.stringify(tools.map((tool) => tool.name)));
    assert.deepEqual(await find(tools, 'calc.lone\ufffd').run({}, ctx()), { content: 'lone ran' });
  });

  test('a server whose tool list changes is listed afresh', async (t) => {
    const { source } = await setup(t, (d) => ({ calc: server(d, 'calc') }));
    const tools = await source.tools();
    assert.ok(!tools.some((tool) => tool.name === 'calc.late'));
    await find(tools, 'calc.add_tool').run({}, ctx());
    const names = await waitFor(async () => {
      const now = await toolsOf(source);
      return now.includes('calc.late') ? now : undefined;
    }, 'calc.late listed');
    assert.ok(names.includes('calc.add'));
  });

  test('close() stops every server and the processes they started, promptly', LIMIT, async (t) => {
    const { dir, source } = await setup(t, (d) => ({ a: server(d, 'a'), b: server(d, 'b', 'stubborn') }));
    const tools = await source.tools();
    await find(tools, 'a.spawn_child').run({}, ctx());
    await find(tools, 'b.spawn_child').run({}, ctx());
    const pids = [...pidsOf(dir, 'a'), ...pidsOf(dir, 'b'), ...pidsOf(dir, 'child')];
    assert.equal(pids.length, 4);
    assert.ok(pids.every(alive));
    const inFlight = find(tools, 'a.slow')
      .run({ ms: HOUR }, ctx())
      .then(
        () => assert.fail('the call should fail'),
        (error: Error) => error,
      );
    await source.close!();
    assert.match((await inFlight).message, /MCP server "a" was stopped during the call to slow \(the service is stopping\)/);
    await waitFor(() => pids.every((pid) => !alive(pid)), 'every process gone', 2_000);
    assert.deepEqual(await source.tools(), []);
    await assert.rejects(find(tools, 'a.add').run({ a: 1, b: 1 }, ctx()), /stopped/);
  });
});

describe('MCP tool source, stopping mid-start', () => {
  test('close() does not wait for a server that is still starting', LIMIT, async (t) => {
    // A start timeout past LIMIT: close() returning at all did not wait for it.
    const { dir, source, logger } = await setup(t, (d) => ({ mute: server(d, 'mute', 'no-init') }), { startTimeoutMs: HOUR });
    const listing = source.tools();
    const [mute] = await waitFor(() => (pidsOf(dir, 'mute').length > 0 ? pidsOf(dir, 'mute') : undefined), 'the mute server spawned');
    await source.close!();
    assert.ok(!alive(mute));
    assert.deepEqual(await listing, []);
    assert.ok(!logger.lines.some((l) => l.event === 'mcp.server_failed'), 'a stop is no failure');
  });
});

describe('MCP tool source, service exit', () => {
  test('a service that exits without close() takes its servers with it', async (t) => {
    const temp = await tempDir('ra-mcp-');
    t.after(temp.cleanup);
    const config = { t: server(temp.dir, 'orphan', 'stubborn') };
    const script = `
      const { createMcpToolSource } = require(${JSON.stringify(join(__dirname, '..', '..', 'src', 'agent', 'tools', 'mcp'))});
      createMcpToolSource(() => (${JSON.stringify(config)})).tools().then((tools) => process.exit(tools.length > 0 ? 0 : 2));
    `;
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: 'ignore' });
      child.on('exit', resolve);
    });
    assert.equal(code, 0);
    const [pid] = pidsOf(temp.dir, 'orphan');
    assert.ok(pid);
    await waitFor(() => !alive(pid), 'the server gone with the service', 2_000);
  });
});

describe('MCP results and schemas', () => {
  test('parameter type names', () => {
    assert.deepEqual(
      parameterTypes({
        type: 'object',
        properties: {
          plain: { type: 'integer' },
          list: { type: ['string', 'null'] },
          union: { oneOf: [{ type: 'number' }, { type: 'boolean' }, { type: 'number' }] },
          open: { anyOf: [{ type: 'string' }, {}] },
          choice: { enum: ['a', 'b', 1] },
          fixed: { const: true },
          shape: { properties: { x: {} } },
          items: { items: { type: 'string' } },
          anything: {},
        },
      }),
      { plain: 'integer', list: 'string|null', union: 'number|boolean', open: 'any', choice: 'string|number', fixed: 'boolean', shape: 'object', items: 'array', anything: 'any' },
    );
    assert.deepEqual(parameterTypes({ type: 'object' }), {});
    assert.deepEqual(parameterTypes(undefined), {});
  });

  test('content: text joined, other kinds summarized', () => {
    assert.equal(
      contentOf({
        content: [
          { type: 'text', text: 'a' },
          { type: 'audio', mimeType: 'audio/wav', data: Buffer.alloc(1234).toString('base64') },
          { type: 'resource', resource: { uri: 'file:///r.txt', text: 'inside' } },
          { type: 'resource', resource: { uri: 'file:///r.bin', mimeType: 'application/zip', blob: Buffer.alloc(10).toString('base64') } },
        ],
      }),
      'a\n[audio/wav, 1234 bytes]\n[resource file:///r.txt]\ninside\n[resource file:///r.bin, application/zip, 10 bytes]',
    );
    assert.equal(contentOf({ content: [], structuredContent: { n: 1 } }), '{"n":1}');
    assert.equal(contentOf({ content: [] }), '');
  });
});
