// An upgrade the service refuses before the WebSocket handshake (a path other than /ws: 404; an address
// locked after failed logins: 429) is answered on the raw socket, which Node hands over with no error
// listener and no timeout of its own. Found in review: a client resetting right after its request made
// the 404's write an uncaught ECONNRESET that ended the service; a client that never closed its side
// kept the socket (and its place at the connection gate) open for good.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { HttpServer } from '../../src/transport/http/http-server';
import { captureLogger } from '../helpers/store-utils';

const UPGRADE = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`;

/** Runs `check` against a server refusing each way: another path (404), a locked address (429 on /ws). */
async function eachRefusal(check: (port: number, path: string, locked: boolean) => Promise<void>): Promise<void> {
  for (const locked of [false, true]) {
    const { logger } = captureLogger();
    const loginRefusedFor = locked ? () => 60 : undefined;
    const srv = new HttpServer({ router: () => async (_req, res) => void res.end('ok'), allowed: () => () => true, onWebSocket: (ws) => ws.close(), loginRefusedFor, logger });
    const { port } = await srv.listen(0, '127.0.0.1');
    try {
      await check(port, locked ? '/ws' : '/nope', locked);
    } finally {
      await srv.close();
    }
  }
}

test('an upgrade refused on its raw socket, reset by the client at once, does not end the process', { timeout: 60_000 }, async (t) => {
  const uncaught: Error[] = [];
  const onUncaught = (error: Error) => void uncaught.push(error);
  process.on('uncaughtException', onUncaught);
  t.after(() => process.off('uncaughtException', onUncaught));
  await eachRefusal(async (port, path) => {
    for (let round = 0; round < 150 && uncaught.length === 0; round += 1) {
      await Promise.all(
        Array.from(
          { length: 4 },
          () =>
            new Promise<void>((resolve) => {
              const client = connect({ port, host: '127.0.0.1' });
              client.on('error', () => undefined);
              client.on('close', () => resolve());
              client.on('connect', () => client.write(UPGRADE(path), () => client.resetAndDestroy()));
            }),
        ),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  });
  assert.deepEqual(
    uncaught.map((e) => e.message),
    [],
  );
});

test('an upgrade refused on its raw socket is closed by the service even when the client keeps its side open', { timeout: 30_000 }, async () => {
  await eachRefusal(async (port, path, locked) => {
    const clients: Socket[] = [];
    try {
      const answers = await Promise.all(
        Array.from(
          { length: 8 },
          () =>
            new Promise<string>((resolve) => {
              const client = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
              clients.push(client);
              let text = '';
              client.on('error', () => undefined);
              client.on('data', (chunk) => (text += chunk.toString()));
              // The client never ends its side: the service's socket must close by itself.
              client.on('end', () => resolve(text));
              client.on('connect', () => client.write(UPGRADE(path)));
            }),
        ),
      );
      for (const answer of answers) assert.match(answer, locked ? /^HTTP\/1\.1 429/ : /^HTTP\/1\.1 404/);
      // Their places at the gate are free again: a ninth request from the address is answered.
      const ninth = await new Promise<string>((resolve) => {
        const client = connect({ port, host: '127.0.0.1' });
        clients.push(client);
        let text = '';
        client.on('error', () => undefined);
        client.on('data', (chunk) => (text += chunk.toString()));
        client.on('close', () => resolve(text));
        client.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      });
      assert.match(ninth, /^HTTP\/1\.1 200/);
    } finally {
      for (const client of clients) client.destroy();
    }
  });
});
