import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { constants } from 'node:os';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import WebSocket from 'ws';
import { ConnectionGate, FRESH_MS, MAX_OPENING_PER_ADDRESS, MAX_WAITING_CONNECTIONS, MAX_WAITING_PER_ADDRESS } from '../../src/transport/http/connection-gate';
import { resetHandle, RESETS_PER_TURN } from '../../src/transport/http/refuse-at-accept';
import { startService, type RunningService } from '../helpers/service';

// Login bursts (issue 25): what will be refused anyway is refused before any HTTP is read. An address
// over its failed-login limit has its new connections closed at accept; an address's connections that
// are still opening (no answer, no `auth` yet) are served a few at a time, the rest wait unread, so a
// burst from one address neither costs the service a parse per connection nor delays another address.

const ALLOW = ['127.0.0.1', '127.0.0.2'];

/** A raw TCP client: what it sent, everything it got until the server closed it. */
interface RawClient {
  socket: Socket;
  received: () => string;
  closed: Promise<string>;
}

async function rawClient(svc: RunningService, localAddress: string, request?: string): Promise<RawClient> {
  const port = Number(new URL(svc.httpUrl).port);
  const socket = connect({ host: '127.0.0.1', port, localAddress });
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => undefined); // A reset (even of the connect) is a close here: what matters is what was received.
  const closed = new Promise<string>((done) => socket.once('close', () => done(text)));
  // Connected (and the request sent), or already refused.
  await new Promise<void>((ready) => {
    socket.once('connect', () => {
      if (request !== undefined) socket.write(request);
      ready();
    });
    socket.once('close', () => ready());
  });
  return { socket, received: () => text, closed };
}

const GET_HEALTH = 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';

/**
 * One WebSocket login with a wrong token from `localAddress`: resolves with the close code, `http 429`
 * for an upgrade answered 429, or `unread` for a connection closed before anything was answered.
 */
function wrongToken(svc: RunningService, localAddress: string, i: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = new WebSocket(svc.wsUrl, { localAddress });
    let answered = false;
    socket.on('upgrade', () => (answered = true));
    socket.on('unexpected-response', (_req, res) => {
      res.resume();
      resolve(`http ${res.statusCode}`);
    });
    socket.on('open', () => socket.send(JSON.stringify({ type: 'auth', token: `guess-${i}` })));
    socket.on('close', (code) => resolve(answered ? String(code) : 'unread'));
    socket.on('error', () => undefined);
  });
}

type LoginBurstLine = { event: string; address?: string; kind?: string; count?: number; refused?: number };

/** Stops the service (a burst's count is written then, as when its window ends) and reads its `auth.login_burst` lines. */
async function loginBursts(svc: RunningService): Promise<LoginBurstLine[]> {
  await svc.stop();
  return (await readFile(join(svc.dataDir, 'service.log'), 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as LoginBurstLine)
    .filter((line) => line.event === 'auth.login_burst');
}

async function withService(run: (svc: RunningService) => Promise<void>): Promise<void> {
  const svc = await startService({}, { allowFrom: ALLOW });
  try {
    await run(svc);
  } finally {
    await svc.dispose();
  }
}

test('attack: an address over its failed-login limit has its new connections closed before any HTTP byte is answered; another address is served', async () => {
  const svc = await startService({}, { allowFrom: ALLOW });
  try {
    for (let i = 0; i < 10; i += 1) assert.equal(await wrongToken(svc, '127.0.0.1', i), '4401');
    // Any request, not only a login: the address will be refused its next login anyway.
    const health = await rawClient(svc, '127.0.0.1', GET_HEALTH);
    assert.equal(await health.closed, '', 'nothing answered to a limited address');
    const upgrade = await rawClient(
      svc,
      '127.0.0.1',
      'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    );
    assert.equal(await upgrade.closed, '', 'no 429, no handshake: closed unread');
    const other = await rawClient(svc, '127.0.0.2', GET_HEALTH);
    assert.match(await other.closed, /^HTTP\/1\.1 200 /);
    // The connections refused at accept count in the address's burst, as refused attempts.
    const bursts = await loginBursts(svc);
    assert.deepEqual(
      bursts.map((b) => [b.address, b.kind, b.count, b.refused]),
      [['127.0.0.1', 'token', 12, 2]],
    );
  } finally {
    await svc.dispose();
  }
});

test(`attack: connections from one address that never finish their request hold at most ${MAX_OPENING_PER_ADDRESS} places; its next one waits unread, another address is served`, async () => {
  await withService(async (svc) => {
    // Slow clients: a request line, never the end of the headers.
    const slow = await Promise.all(Array.from({ length: MAX_OPENING_PER_ADDRESS }, () => rawClient(svc, '127.0.0.1', 'GET /health HTTP/1.1\r\n')));
    const next = await rawClient(svc, '127.0.0.1', GET_HEALTH);
    const other = await rawClient(svc, '127.0.0.2', GET_HEALTH);
    assert.match(await other.closed, /^HTTP\/1\.1 200 /);
    assert.equal(next.received(), '', 'the address had no place free: its request was not read');
    // One slow client leaves: the waiting connection takes its place and is answered.
    slow[0].socket.destroy();
    assert.match(await next.closed, /^HTTP\/1\.1 200 /);
    for (const client of slow) client.socket.destroy();
  });
});

test('attack: 300 parallel wrong tokens from one address: 10 are checked, the rest refused (most unread), each one counted', async () => {
  const svc = await startService({}, { allowFrom: ALLOW });
  let outcomes: string[];
  let bursts: LoginBurstLine[];
  try {
    outcomes = await Promise.all(Array.from({ length: 300 }, (_, i) => wrongToken(svc, '127.0.0.1', i)));
    bursts = await loginBursts(svc);
  } finally {
    await svc.dispose();
  }
  const counts: Record<string, number> = {};
  for (const outcome of outcomes) counts[outcome] = (counts[outcome] ?? 0) + 1;
  assert.equal(counts['4401'], 10, JSON.stringify(counts));
  // Upgraded before the limit: refused unchecked (4429); read before it: 429; the rest closed unread.
  assert.equal((counts['4429'] ?? 0) + (counts['http 429'] ?? 0) + (counts.unread ?? 0), 290, JSON.stringify(counts));
  assert.ok((counts.unread ?? 0) > 200, `most are refused before anything is read: ${JSON.stringify(counts)}`);
  assert.equal(bursts.length, 1);
  assert.equal(bursts[0].count, 300, 'every attempt is in the count, those closed unread too');
  assert.equal(bursts[0].refused, 290);
});

/** Resolves once the service's gate holds `count` connections waiting (its own figure, read by this test alone; the runner's per-test timeout bounds the wait). */
async function waitingPlaces(svc: RunningService, count: number): Promise<void> {
  const gate = (svc.service as unknown as { http: { gate: { waiting: number } } }).http.gate;
  while (gate.waiting < count) await new Promise((resolve) => setTimeout(resolve, 10));
}

test('attack: a few addresses (none allowed to connect) that fill every waiting place cannot keep another address out', async () => {
  await withService(async (svc) => {
    // Eight addresses outside allow_from, each holding its opening places with silent connections and
    // as many waiting as it may: together every waiting place of the service. Made a listen backlog at a
    // time (what the kernel queues), each batch taken by the service before the next.
    const attackers = Array.from({ length: Math.ceil(MAX_WAITING_CONNECTIONS / MAX_WAITING_PER_ADDRESS) }, (_, i) => `127.0.0.${i + 3}`);
    const held: RawClient[] = [];
    try {
      for (const address of attackers) held.push(...(await Promise.all(Array.from({ length: MAX_OPENING_PER_ADDRESS }, () => rawClient(svc, address)))));
      const rest = attackers.flatMap((address) => Array.from({ length: MAX_WAITING_PER_ADDRESS }, () => address));
      for (let i = 0; i < rest.length; i += 32) {
        held.push(...(await Promise.all(rest.slice(i, i + 32).map((address) => rawClient(svc, address)))));
        await waitingPlaces(svc, Math.min(i + 32, rest.length));
      }
      const other = await rawClient(svc, '127.0.0.2', GET_HEALTH);
      assert.match(await other.closed, /^HTTP\/1\.1 200 /, 'the allowed address is served');
    } finally {
      for (const client of held) client.socket.destroy();
    }
  });
});

test('a stopping service closes the connections still waiting for a place at once', async () => {
  const svc = await startService({}, { allowFrom: ALLOW });
  try {
    const slow = await Promise.all(Array.from({ length: MAX_OPENING_PER_ADDRESS }, () => rawClient(svc, '127.0.0.1', 'GET /health HTTP/1.1\r\n')));
    const waiting = await Promise.all(Array.from({ length: 5 }, () => rawClient(svc, '127.0.0.1', GET_HEALTH)));
    await svc.stop();
    for (const client of [...slow, ...waiting]) await client.closed;
  } finally {
    await svc.dispose();
  }
});

/**
 * A connection gate whose lock (`state.locked`) and clock (`state.clock`: each FRESH_MS moved lets the
 * connections let in stop counting as fresh) the test moves by hand, on a plain server of 127.0.0.1 that
 * hands it every connection, paused, after `prepare`.
 */
async function gateOnServer(prepare: (socket: Socket) => void) {
  const state = { locked: false, clock: 0 };
  const accepted: Socket[] = [];
  const letIn: Socket[] = [];
  const gate = new ConnectionGate(
    () => state.locked,
    (socket) => void letIn.push(socket),
    () => state.clock,
  );
  const server = createServer({ pauseOnConnect: true }, (socket) => {
    prepare(socket);
    accepted.push(socket);
    gate.accept(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { state, accepted, letIn, gate, server, port: (server.address() as AddressInfo).port };
}

test(`attack: a lock that comes while connections of its address wait at the gate refuses them ${RESETS_PER_TURN} a turn of the event loop, not all in one run`, async () => {
  // What made the one-address WebSocket burst's longest chat turn (issue 25): its 10th failed login
  // came with ~250 connections waiting, and the gate reset all of them in one synchronous run.
  const { state, accepted, letIn, gate, server, port } = await gateOnServer((socket) => socket.on('error', () => undefined));
  const total = MAX_OPENING_PER_ADDRESS + RESETS_PER_TURN * 3 + 5;
  const clients: Socket[] = [];
  const sent: Promise<void>[] = [];
  try {
    for (let i = 0; i < total; i += 1) {
      const client = connect({ port, host: '127.0.0.1' });
      client.on('error', () => undefined);
      clients.push(client);
      // Each sends a request at once: a waiting connection read (resumed) would show it in bytesRead.
      sent.push(new Promise<void>((resolve) => client.write('POST /login HTTP/1.1\r\nHost: x\r\n\r\n', () => resolve())));
    }
    await Promise.all(sent);
    // Every connection accepted, the address's places taken and the rest waiting (the fresh window lets a few in at a time).
    while (accepted.length < total || letIn.length < MAX_OPENING_PER_ADDRESS) {
      state.clock += FRESH_MS;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    state.clock += FRESH_MS;
    const waiting = accepted.filter((socket) => !letIn.includes(socket));
    assert.equal(gate.waiting, waiting.length);
    state.locked = true;
    // One of those let in closes (its failed login): the gate looks at the waiting ones again.
    gate.opened(letIn[0]!);
    assert.equal(gate.waiting, 0, 'none waits for a place any more');
    const resetInTheRun = waiting.filter((socket) => socket.destroyed).length;
    assert.ok(resetInTheRun <= RESETS_PER_TURN, `${resetInTheRun} of ${waiting.length} reset in the run that saw the lock`);
    let turns = 0;
    while (waiting.some((socket) => !socket.destroyed)) {
      await new Promise((resolve) => setImmediate(resolve));
      turns += 1;
      // A reset lost would leave this loop spinning: fail instead (review19d).
      assert.ok(turns <= Math.ceil(waiting.length / RESETS_PER_TURN) + 2, `still ${waiting.filter((socket) => !socket.destroyed).length} not reset after ${turns} turns`);
    }
    assert.ok(turns >= Math.ceil(waiting.length / RESETS_PER_TURN) - 1, `all reset within ${turns} turns`);
    assert.ok(
      waiting.every((socket) => socket.bytesRead === 0),
      'nothing of them was read',
    );
  } finally {
    for (const client of clients) client.destroy();
    for (const socket of accepted) socket.destroy();
    gate.close();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("a refused connection whose reset fails does not take the process down (nothing else listens to a waiting socket's error): refused at accept, and after waiting", async (t) => {
  // Each accepted socket's reset fails (as a refused setsockopt would): Node's _destroy then emits `error`.
  // No listener of the test's own: the gate's must hear it, or the emit throws out of an immediate.
  const failed: Socket[] = [];
  const handles: { close(): void }[] = [];
  const { state, accepted, letIn, gate, server, port } = await gateOnServer((socket) => {
    const handle = (socket as unknown as { _handle: { reset(): number; close(): void } })._handle;
    handles.push(handle);
    handle.reset = () => -constants.errno.EBADF;
    const emit = socket.emit.bind(socket);
    socket.emit = (name: string | symbol, ...args: unknown[]) => {
      if (name === 'error') failed.push(socket);
      return emit(name, ...args);
    };
  });
  const clients: Socket[] = [];
  const open = (): void => {
    const client = connect({ port, host: '127.0.0.1' });
    client.on('error', () => undefined);
    clients.push(client);
  };
  t.after(() => {
    for (const client of clients) client.destroy();
    // The failed resets left the handles open: closed here (their sockets never say `close`, so the
    // server's close is not waited for).
    for (const handle of handles) handle.close();
    server.close();
  });
  // Enough to fill the address's places and leave one waiting.
  for (let i = 0; i <= MAX_OPENING_PER_ADDRESS; i += 1) open();
  while (accepted.length <= MAX_OPENING_PER_ADDRESS || letIn.length < MAX_OPENING_PER_ADDRESS) {
    state.clock += FRESH_MS;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  state.clock += FRESH_MS;
  assert.equal(gate.waiting, 1);
  const waiting = accepted.find((socket) => !letIn.includes(socket))!;
  // The lock comes; a place frees: the waiting one is refused, its reset in the queue (a later turn).
  state.locked = true;
  gate.opened(letIn[0]!);
  for (let turns = 0; !failed.includes(waiting); turns += 1) {
    assert.ok(turns < 10, 'the waiting socket was not reset');
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.ok(waiting.destroyed);
  // And one refused at accept, at once.
  open();
  while (accepted.length <= MAX_OPENING_PER_ADDRESS + 1) await new Promise((resolve) => setTimeout(resolve, 10));
  const atAccept = accepted.at(-1)!;
  assert.ok(failed.includes(atAccept) && atAccept.destroyed, 'refused at accept, its reset failed and heard');
});

test('a handle refused before its Socket (refuseAtAccept) whose reset fails is closed: it holds no descriptor, and nothing is emitted', () => {
  const calls: string[] = [];
  resetHandle({ getpeername: () => 0, reset: () => (calls.push('reset'), -constants.errno.EBADF), close: () => void calls.push('close') });
  resetHandle({ getpeername: () => 0, reset: () => (calls.push('reset'), 0), close: () => void calls.push('close') });
  assert.deepEqual(calls, ['reset', 'close', 'reset']);
});
