// Sockets the service holds for a client it has not let in or has refused. Found in review: a connection
// waiting at the connection gate had no bound (it waited as long as its address's opening connections
// held their places), and a client refused by allow_from that pipelined its requests, half-closed its
// side and never read kept its socket open for good (every refusal answered, none read, no timeout
// applying to an answered request).
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { MAX_OPENING_PER_ADDRESS } from '../../src/transport/http/connection-gate';
import { HttpServer, type HttpServerOptions } from '../../src/transport/http/http-server';
import { captureLogger } from '../helpers/store-utils';

async function withServer(options: Partial<HttpServerOptions>, body: (port: number, connections: () => Promise<number>, inner: Server) => Promise<void>): Promise<void> {
  const { logger } = captureLogger();
  const srv = new HttpServer({ router: () => async (_req, res) => void res.end('ok'), allowed: () => (address) => address === '127.0.0.1', onWebSocket: (ws) => ws.close(), logger, ...options });
  const { port } = await srv.listen(0, '127.0.0.1');
  // The sockets the server holds, whatever their state (waiting at the gate, answering, closing).
  const inner = (srv as unknown as { server: Server }).server;
  const connections = () => new Promise<number>((resolve, reject) => inner.getConnections((error, count) => (error ? reject(error) : resolve(count))));
  try {
    await body(port, connections, inner);
  } finally {
    await srv.close();
  }
}

/** A raw client, connected; `closed` resolves once the server has closed it. */
async function rawClient(port: number, localAddress: string, allowHalfOpen = false): Promise<{ socket: Socket; closed: Promise<void>; isClosed: () => boolean }> {
  const socket = connect({ port, host: '127.0.0.1', localAddress, allowHalfOpen });
  socket.on('error', () => undefined);
  let done = false;
  const closed = new Promise<void>((resolve) => socket.once('close', () => ((done = true), resolve())));
  await new Promise<void>((resolve) => {
    socket.once('connect', () => resolve());
    socket.once('close', () => resolve());
  });
  return { socket, closed, isClosed: () => done };
}

/** Polls `count` until it is `want`, for at most `ms`; answers the last count seen. */
async function settlesAt(count: () => Promise<number>, want: number, ms: number): Promise<number> {
  const until = Date.now() + ms;
  let seen = await count();
  while (seen !== want && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    seen = await count();
  }
  return seen;
}

test('attack: a client refused by allow_from that pipelines requests, half-closes and never reads is closed by the service', { timeout: 60_000 }, async () => {
  await withServer({}, async (port, connections) => {
    const client = await rawClient(port, '127.0.0.2', true);
    try {
      client.socket.pause();
      // Enough refusals that their answers fill what the client's side can hold unread.
      client.socket.end('GET /health HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(20_000));
      assert.equal(await settlesAt(connections, 0, 15_000), 0, 'the refused socket is still held');
    } finally {
      client.socket.destroy();
    }
  });
});

test(
  `attack: a connection waiting at the gate (its address's ${MAX_OPENING_PER_ADDRESS} places held by connections that send nothing) is closed after the waiting bound, not held while they are`,
  { timeout: 60_000 },
  async () => {
    await withServer({ gateWaitMs: 200 }, async (port) => {
      const openers = await Promise.all(Array.from({ length: MAX_OPENING_PER_ADDRESS }, () => rawClient(port, '127.0.0.1')));
      try {
        const waiting = await rawClient(port, '127.0.0.1');
        await waiting.closed;
        // The places' holders are closed only by the headers timeout (30 s): the waiting one went first.
        assert.deepEqual(
          openers.map((opener) => opener.isClosed()),
          openers.map(() => false),
        );
      } finally {
        for (const opener of openers) opener.socket.destroy();
      }
    });
  },
);

test('a client refused by allow_from that pipelines many requests arms one close timer and one close listener for its socket, not one per request', { timeout: 30_000 }, async () => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => void warnings.push(warning.name);
  process.on('warning', onWarning);
  try {
    await withServer({}, async (port, _connections, inner) => {
      /** The `close` listeners of the server's side of one refused connection that sent `requests` requests in one write, counted as it closes. */
      const closeListeners = async (requests: number): Promise<number> => {
        const client = await rawClient(port, '127.0.0.2');
        client.socket.on('data', () => undefined);
        client.socket.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(requests));
        await client.closed;
        return lastClosing;
      };
      let lastClosing = -1;
      inner.prependListener('connection', (socket: Socket) => socket.prependListener('close', () => (lastClosing = socket.listenerCount('close'))));
      const one = await closeListeners(1);
      const many = await closeListeners(40);
      assert.equal(many, one, `40 pipelined refusals left ${many} close listeners, one left ${one}`);
    });
    // A warning is emitted on the next tick of the listener that passed the limit: let it come.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(
      warnings.filter((name) => name === 'MaxListenersExceededWarning'),
      [],
    );
  } finally {
    process.off('warning', onWarning);
  }
});
