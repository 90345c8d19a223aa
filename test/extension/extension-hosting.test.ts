// Several editor windows on one global storage: exactly one hosts, the others attach over loopback,
// and one of them takes over when the host goes away (gracefully or by crash).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import type { PublicConfig } from '../../src/extension/backend';
import { Hosting, type HostingState } from '../../src/extension/hosting';
import { TEST_TOKEN } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function storage(): Promise<string> {
  const t = await tempDir('ra-windows-');
  cleanups.push(t.cleanup);
  await writeFile(join(t.dir, 'service.json'), JSON.stringify({ auth_token: TEST_TOKEN, permission_mode: 'ask' }));
  return t.dir;
}

function window(dataDir: string, name: string): Hosting & { lines: string[] } {
  const lines: string[] = [];
  const hosting = new Hosting({ dataDir, port: () => 0, bindHost: '127.0.0.1', hostServices: {}, log: (l) => lines.push(`${name}: ${l}`), retry: { initialMs: 50, maxMs: 300 } });
  cleanups.push(() => hosting.stop());
  return Object.assign(hosting, { lines });
}

const states = (...ws: Hosting[]) => ws.map((w) => w.state.state).sort();

for (const how of ['Stop then Start', 'Restart'] as const) {
  test(`${how} while the store still opens (the keys held): it proceeds (waiting, then hosting once the stopped service is done), not stuck behind the held open`, async () => {
    const dir = await storage();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const lines: string[] = [];
    const a = new Hosting({ dataDir: dir, port: () => 0, bindHost: '127.0.0.1', hostServices: {}, log: (l) => lines.push(l), retry: { initialMs: 50, maxMs: 300 }, ready: held });
    cleanups.push(async () => {
      release();
      await a.stop();
    });
    const { serving } = a.begin();
    assert.equal((await serving).state, 'hosting');
    let reached: HostingState | undefined;
    if (how === 'Restart') void a.restart().then((state) => (reached = state));
    else {
      await a.stop();
      assert.equal(a.state.state, 'stopped');
      void a.start().then((state) => (reached = state));
    }
    try {
      // No timing goal: the open stays held throughout, so Start answering at all shows it is not waiting for it.
      await waitFor(() => reached, `${how} to answer while the stopped service still opens`, 20_000);
      assert.equal(reached!.state, 'waiting', JSON.stringify(reached));
      assert.match((reached as { detail: string }).detail, /still finishing/);
    } finally {
      release();
    }
    await waitFor(() => a.state.state === 'hosting', 'hosting once the stopped service released the data directory', 20_000);
    assert.equal((await a.backend!.request({ type: 'get_config' })).status, 'ok');
  });
}

test('one window hosts, the others attach; a config change from any window reaches every window', async () => {
  const dir = await storage();
  const [a, b, c] = [window(dir, 'a'), window(dir, 'b'), window(dir, 'c')];
  // Started together: they race for the lock; exactly one wins.
  await Promise.all([a.start(), b.start(), c.start()]);
  await waitFor(() => states(a, b, c).join() === 'client,client,hosting', 'one host and two clients');
  const host = [a, b, c].find((w) => w.state.state === 'hosting')!;
  const clients = [a, b, c].filter((w) => w !== host);
  const hostPort = (host.state as { port: number }).port;
  for (const w of clients) assert.deepEqual(w.state, { state: 'client', port: hostPort });
  assert.equal(clients[0]!.backend!.kind, 'remote');

  const seen: PublicConfig[] = [];
  host.backend!.on('config', (config) => seen.push(config));
  const other: PublicConfig[] = [];
  clients[1]!.backend!.on('config', (config) => other.push(config));
  const reply = await clients[0]!.backend!.request({ type: 'update_config', config: { permission_mode: 'deny' } });
  assert.equal(reply.status, 'ok', JSON.stringify(reply));
  assert.equal(host.service!.config.current.permission_mode, 'deny');
  assert.equal(seen.at(-1)?.permission_mode, 'deny');
  await waitFor(() => other.at(-1)?.permission_mode === 'deny', 'the other client window hears it');
  assert.equal(clients[0]!.backend!.config?.permission_mode, 'deny');

  // A chat view in a client window: its own session, frames and ids passed through unchanged.
  const responses: Record<string, unknown>[] = [];
  const session = clients[0]!.backend!.openViewChannel({ onResponse: (e) => responses.push(e), onEvent: () => undefined });
  session.send({ type: 'get_config', id: 42 });
  const answered = await waitFor(() => responses.find((r) => r.id === 42), 'view response');
  assert.equal(answered.status, 'ok');
  session.dispose();
});

test('when the hosting window closes, one of the others takes over and the rest re-attach to it', async () => {
  const dir = await storage();
  const a = window(dir, 'a');
  assert.equal((await a.start()).state, 'hosting');
  const b = window(dir, 'b');
  const c = window(dir, 'c');
  assert.equal((await b.start()).state, 'client');
  assert.equal((await c.start()).state, 'client');
  const history: HostingState[] = [];
  b.on('state', (s) => history.push(s));

  const began = performance.now();
  await a.stop();
  await waitFor(() => states(b, c).join() === 'client,hosting', 'a new host and a re-attached client', 10_000);
  console.log(`# takeover after the host window closed: ${Math.round(performance.now() - began)} ms`);
  const host = [b, c].find((w) => w.state.state === 'hosting')!;
  const client = [b, c].find((w) => w !== host)!;
  assert.equal((client.state as { port: number }).port, (host.state as { port: number }).port);
  const reply = await client.backend!.request({ type: 'get_config' });
  assert.equal(reply.status, 'ok');
  assert.ok(
    history.some((s) => s.state === 'waiting'),
    'b noticed the host went away',
  );
});

/** A window in another process (the real multi-window case: the lock holds across processes). */
function childWindow(dataDir: string): { child: ChildProcess; ready: Promise<number> } {
  const hostingModule = resolve('src/extension/hosting.ts');
  const script = `
    const { Hosting } = require(${JSON.stringify(hostingModule)});
    const h = new Hosting({ dataDir: ${JSON.stringify(dataDir)}, port: () => 0, bindHost: '127.0.0.1', hostServices: {}, log: () => {} });
    h.start().then((s) => console.log(JSON.stringify(s)));
    process.on('SIGTERM', () => h.stop().then(() => process.exit(0)));
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  cleanups.push(async () => child.kill('SIGKILL'));
  const ready = new Promise<number>((resolveReady, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) {
        const state = JSON.parse(line) as HostingState;
        if (state.state === 'hosting') resolveReady(state.port);
        else reject(new Error(`child window: ${line}`));
      }
    });
    child.once('exit', (code) => reject(new Error(`child exited ${code}`)));
  });
  return { child, ready };
}

test('across processes: a window attaches to the hosting process, and takes over when it is killed', async () => {
  const dir = await storage();
  const { child, ready } = childWindow(dir);
  const port = await ready;
  const b = window(dir, 'b');
  assert.deepEqual(await b.start(), { state: 'client', port });
  // A crash: no deactivate, the lock file is left behind with a dead pid (taken over as stale).
  child.kill('SIGKILL');
  await waitFor(() => b.state.state === 'hosting', 'b hosts after the other process died', 10_000);
  assert.equal((await b.backend!.request({ type: 'get_config' })).status, 'ok');
});

test('lanAccess writes the tcp channel allow_from (both channel forms) and the service then binds all interfaces', async () => {
  const { LAN_PATTERNS } = await import('../../src/config/lan-access');
  const { readFile } = await import('node:fs/promises');
  const dir = await storage();
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TEST_TOKEN, channels: { lan: { type: 'tcp', port: 5000 }, webhook: { accounts: {} } } }));
  const w = new Hosting({ dataDir: dir, port: () => 0, hostServices: {}, log: () => undefined });
  cleanups.push(() => w.stop());
  assert.equal((await w.start()).state, 'hosting');
  assert.equal(await w.service!.applyLanAccess(true), true);
  const written = JSON.parse(await readFile(join(dir, 'service.json'), 'utf8'));
  assert.deepEqual(written.channels.lan.allow_from, LAN_PATTERNS);
  assert.ok(written.channels.webhook, 'the object form and the other channels are kept');
  const state = await w.restart();
  assert.equal(state.state, 'hosting');
  assert.notEqual((state as { host: string }).host, '127.0.0.1');
  assert.equal(await w.service!.applyLanAccess(true), false, 'nothing to change');
  assert.equal(await w.service!.applyLanAccess(false), true);
  assert.deepEqual(w.service!.config.current.channels.find((c) => c.type === 'tcp')!.type === 'tcp' && (w.service!.config.current.channels[0] as { allow_from: string[] }).allow_from, [
    '127.0.0.1',
    '::1',
  ]);
  // Array form, no tcp channel yet.
  await w.stop();
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TEST_TOKEN, channels: [] }));
  await w.start();
  await w.service!.applyLanAccess(true);
  assert.deepEqual(JSON.parse(await readFile(join(dir, 'service.json'), 'utf8')).channels, [{ name: 'lan', type: 'tcp', allow_from: LAN_PATTERNS }]);
});

test('a damaged service.db: the window shows the open error as before and releases the lock and the port', async () => {
  const dir = await storage();
  await writeFile(join(dir, 'service.db'), 'not a database at all');
  const a = window(dir, 'a');
  const seen: HostingState[] = [];
  a.on('state', (state) => seen.push(state));
  const state = await a.start();
  assert.equal(state.state, 'error');
  assert.match((state as { detail: string }).detail, /is not a readable database/);
  assert.ok(
    a.lines.some((l) => /service could not open: .*is not a readable database/.test(l)),
    a.lines.join('\n'),
  );
  assert.equal(a.backend, undefined);
  assert.equal(a.service, undefined);
  // Listening comes before the open's failure unless the open fails first (sql.js's load usually takes
  // longer than a bind): either way no port is left open.
  const listened = seen.find((s) => s.state === 'hosting') as { port: number } | undefined;
  if (listened) await assert.rejects(fetch(`http://127.0.0.1:${listened.port}/health`));
  // The lock was released: another window (the file repaired) hosts.
  const { rm } = await import('node:fs/promises');
  await rm(join(dir, 'service.db'));
  const b = window(dir, 'b');
  assert.equal((await b.start()).state, 'hosting');
});
