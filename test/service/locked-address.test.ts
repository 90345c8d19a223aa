import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { test } from 'node:test';
import { LOGIN_FAILURE_LIMIT, LOGIN_WINDOW_MS, LoginFailures } from '../../src/transport/auth/login-failures';
import { ConnectionGate, MAX_OPENING_PER_ADDRESS } from '../../src/transport/http/connection-gate';
import { HttpServer } from '../../src/transport/http/http-server';
import { MAX_PENDING_RESETS, RESETS_PER_TURN, ResetQueue, refuseAtAccept, resetHandle, type AcceptedHandle } from '../../src/transport/http/refuse-at-accept';
import { captureLogger } from '../helpers/store-utils';

// Login bursts from one address (issue 25): once an address is over its failed-login limit, every new
// connection from it is refused at accept, before Node's HTTP parser is attached to it (the cheapest
// refusal: nothing parsed, nothing answered), each one still counted in the address's burst; when the
// limit's window ends the same address is served again. Real sockets on 127.0.0.1; the limit's clock
// is the test's, so the window's end needs no waiting.

/** Connects from `localAddress`, sends `request`, resolves with everything received until the close. */
function exchange(port: number, localAddress: string, request: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', () => undefined); // a reset is a close here: what matters is what was received
    socket.once('connect', () => socket.write(request));
    socket.once('close', () => resolve(text));
  });
}

const POST_AUTH = 'POST /auth HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}';

test("attack: a locked address's burst is reset unread and counted; another address is served meanwhile; the locked one again once its window ends", async () => {
  let now = Date.parse('2026-11-26T20:00:00Z');
  const { logger, lines } = captureLogger();
  const failures = new LoginFailures(logger, () => now);
  const server = new HttpServer({
    // Every request is a wrong login (401), counted as the service's doors count them.
    router: () => async (req, res) => {
      req.resume();
      const attempt = failures.begin(req.socket.remoteAddress!, 'password');
      if (attempt.retryAfterSeconds === 0) attempt.failed();
      res.writeHead(attempt.retryAfterSeconds > 0 ? 429 : 401, { Connection: 'close' }).end();
    },
    allowed: () => () => true,
    onWebSocket: (ws) => ws.close(),
    logger,
    loginRefusedFor: (address) => failures.refusedFor(address, 'token'),
    refusesConnection: (address) => failures.refusesConnection(address),
  });
  const { port } = await server.listen(0, '127.0.0.1');
  assert.equal(server.refusesAtAccept, true, 'refused before a Socket is made (refuse-at-accept.ts)');
  try {
    for (let i = 0; i < LOGIN_FAILURE_LIMIT; i += 1) assert.match(await exchange(port, '127.0.0.1', POST_AUTH), /^HTTP\/1\.1 401 /);
    const burst = Promise.all(Array.from({ length: 50 }, () => exchange(port, '127.0.0.1', POST_AUTH)));
    const other = await exchange(port, '127.0.0.2', POST_AUTH);
    assert.match(other, /^HTTP\/1\.1 401 /, 'an address under its limit is read and answered during the burst');
    assert.deepEqual(new Set(await burst), new Set(['']), 'nothing of the locked address is answered');
    now += LOGIN_WINDOW_MS;
    assert.match(await exchange(port, '127.0.0.1', POST_AUTH), /^HTTP\/1\.1 401 /, 'its window over, the address is read again');
    failures.flush();
    const counted = lines.filter((line) => line.event === 'auth.login_burst').map((line) => [line.fields.address, line.fields.count, line.fields.refused]);
    // One line for the locked address's window (a window of one failure, the other two, has no burst line).
    assert.deepEqual(counted, [['127.0.0.1', LOGIN_FAILURE_LIMIT + 50, 50]], 'each refused connection is in the burst');
  } finally {
    await server.close();
  }
});

/** A TCP server that accepts paused, every connection through `gate`. */
async function gatedServer(gate: ConnectionGate): Promise<{ server: Server; port: number }> {
  const server = createServer({ pauseOnConnect: true }, (socket) => gate.accept(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

test('the gate hands a connection to be read (the HTTP parser) only when it lets it in: never a refused one, a waiting one once it has a place', async () => {
  const read: string[] = [];
  const gate = new ConnectionGate(
    (address) => address === '127.0.0.3',
    (socket) => read.push(`${socket.remoteAddress} ${socket.isPaused() ? 'paused' : 'flowing'}`),
  );
  const { server, port } = await gatedServer(gate);
  const clients: Socket[] = [];
  try {
    const open = (localAddress: string) =>
      new Promise<Socket>((resolve) => {
        const socket = connect({ host: '127.0.0.1', port, localAddress });
        socket.on('error', () => undefined);
        clients.push(socket);
        // Connected, or already reset (a refusal can come before the client's connect completes).
        socket.once('connect', () => resolve(socket));
        socket.once('close', () => resolve(socket));
      });
    const refused = await Promise.all(Array.from({ length: 20 }, () => open('127.0.0.3')));
    await Promise.all(refused.map((socket) => new Promise((resolve) => (socket.closed ? resolve(0) : socket.once('close', resolve)))));
    for (let i = 0; i <= MAX_OPENING_PER_ADDRESS; i += 1) await open('127.0.0.1');
    while (read.length < MAX_OPENING_PER_ADDRESS || gate.waiting < 1) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(read, Array(MAX_OPENING_PER_ADDRESS).fill('127.0.0.1 paused'), 'refused ones never; let in ones before they are resumed; the ninth waits');
    clients[20].destroy();
    while (read.length < MAX_OPENING_PER_ADDRESS + 1) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(gate.waiting, 0);
  } finally {
    for (const socket of clients) socket.destroy();
    gate.close();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("a locked address's connections are reset before Node makes a Socket of them, never read; another address's get theirs", async () => {
  const sockets: string[] = [];
  const server = createServer({ pauseOnConnect: true }, (socket) => {
    sockets.push(socket.remoteAddress!);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const refusedFrom: string[] = [];
  try {
    assert.equal(
      refuseAtAccept(server, (address) => (address === '127.0.0.3' ? (refusedFrom.push(address), true) : false)),
      true,
      "this Node's listening handle is as refuse-at-accept.ts expects",
    );
    const refused = await Promise.all(Array.from({ length: 40 }, () => exchange(port, '127.0.0.3', POST_AUTH)));
    assert.deepEqual(new Set(refused), new Set(['']), 'nothing answered');
    assert.equal(refusedFrom.length, 40, 'each refusal counted once');
    await exchange(port, '127.0.0.4', POST_AUTH);
    assert.deepEqual(sockets, ['127.0.0.4'], 'a Socket for the other address only');
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test('refusals of one accept batch are reset a few a turn of the event loop, none before the batch is over', async () => {
  const resets: number[] = [];
  let turn = 0;
  const queue = new ResetQueue(resetHandle);
  const handle = (): AcceptedHandle => ({ getpeername: () => 0, reset: () => (resets.push(turn), 0), close: () => assert.fail('reset worked') });
  const count = RESETS_PER_TURN * 2 + 3;
  for (let i = 0; i < count; i += 1) queue.add(handle());
  assert.equal(resets.length, 0, 'not in the accept callback');
  while (resets.length < count) {
    await new Promise((resolve) => setImmediate(resolve));
    turn += 1;
  }
  const perTurn = new Map<number, number>();
  for (const t of resets) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
  assert.deepEqual([...perTurn.values()], [RESETS_PER_TURN, RESETS_PER_TURN, 3]);
});

test('attack: refusals past the reset queue cap take the plain refusal path (a Socket the gate refuses) instead of queueing without bound, each holding a descriptor', async () => {
  const CAP = MAX_PENDING_RESETS;
  const plain: AcceptedHandle[] = [];
  let resets = 0;
  const listening = { onconnection: (_error: number, accepted?: AcceptedHandle) => void plain.push(accepted!) };
  const server = { _handle: listening } as unknown as Parameters<typeof refuseAtAccept>[0];
  assert.equal(
    refuseAtAccept(server, () => true),
    true,
  );
  const handle = (): AcceptedHandle => ({ getpeername: (out) => ((out.address = '127.0.0.3'), 0), reset: () => (resets++, 0), close: () => assert.fail('reset worked') });
  // One accept batch far past the cap, in one turn of the event loop (nothing reset meanwhile).
  for (let i = 0; i < CAP + 40; i += 1) listening.onconnection(0, handle());
  assert.equal(plain.length, 40, 'refusals past the cap went the plain way');
  while (resets < CAP) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(resets, CAP, 'those within the cap were reset');
});
