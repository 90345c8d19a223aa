import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { sendText, textFrame } from '../../src/transport/connections/ws-frames';

/** A real ws server on 127.0.0.1 and `count` real ws clients; `run` gets the server's sockets. */
async function withSockets(count: number, serverOptions: { perMessageDeflate?: boolean }, run: (sockets: WebSocket[], received: string[][]) => Promise<void>): Promise<void> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, ...serverOptions });
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  const sockets: WebSocket[] = [];
  const accepted = new Promise<void>((resolve) =>
    server.on('connection', (socket) => {
      sockets.push(socket);
      if (sockets.length === count) resolve();
    }),
  );
  const clients: WebSocket[] = [];
  const received: string[][] = [];
  for (let i = 0; i < count; i += 1) {
    const client = new WebSocket(`ws://127.0.0.1:${port}`, { perMessageDeflate: serverOptions.perMessageDeflate ?? false });
    const mine: string[] = [];
    received.push(mine);
    client.on('message', (data, isBinary) => mine.push(isBinary ? '<binary>' : data.toString()));
    await new Promise((resolve, reject) => (client.once('open', resolve), client.once('error', reject)));
    clients.push(client);
  }
  await accepted;
  try {
    await run(sockets, received);
  } finally {
    for (const client of clients) client.terminate();
    await new Promise((resolve) => server.close(resolve));
  }
}

const until = async (done: () => boolean) => {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
};

// Every length class of RFC 6455's header (7-bit, 16-bit, 64-bit), multi-byte UTF-8 at the edges.
const TEXTS = ['', 'a', 'é'.repeat(62) + 'x', 'x'.repeat(126), '€'.repeat(21_845), 'y'.repeat(65_535), 'z'.repeat(65_536), '{"delta":"🙂"}'.repeat(20_000)];

describe('pre-framed WebSocket text frames', () => {
  test('a real ws client reads every length class, in order with frames ws writes itself', async () => {
    await withSockets(1, {}, async ([socket], [received]) => {
      const expected: string[] = [];
      for (const text of TEXTS) {
        sendText(socket!, text);
        socket!.send(`ws:${text.length}`);
        socket!.ping();
        expected.push(text, `ws:${text.length}`);
      }
      await until(() => received!.length === expected.length);
      assert.deepEqual(received, expected);
    });
  });

  test('one text sent to many sockets in one run reaches each whole (the frame is shared)', async () => {
    await withSockets(3, {}, async (sockets, received) => {
      const event = JSON.stringify({ event: 'chat.delta', delta: 'ü'.repeat(300) });
      for (const socket of sockets) sendText(socket, event);
      for (const socket of sockets) sendText(socket, 'second');
      await until(() => received.every((mine) => mine.length === 2));
      for (const mine of received) assert.deepEqual(mine, [event, 'second']);
    });
  });

  test('a connection with an extension (compression) is sent to by ws itself', async () => {
    await withSockets(1, { perMessageDeflate: true }, async ([socket], [received]) => {
      assert.notEqual(socket!.extensions, '');
      sendText(socket!, 'compressed '.repeat(100));
      await until(() => received!.length === 1);
      assert.deepEqual(received, ['compressed '.repeat(100)]);
    });
  });

  test('a closing socket is not written to', async () => {
    await withSockets(1, {}, async ([socket], [received]) => {
      socket!.close(1000, 'bye');
      sendText(socket!, 'after close');
      await new Promise((resolve) => socket!.once('close', resolve));
      assert.deepEqual(received, []);
    });
  });

  test('the header is the RFC 6455 one for each length class', () => {
    assert.deepEqual([...textFrame('ab')], [0x81, 2, 0x61, 0x62]);
    assert.deepEqual([...textFrame('x'.repeat(126)).subarray(0, 4)], [0x81, 126, 0, 126]);
    assert.deepEqual([...textFrame('x'.repeat(65_536)).subarray(0, 10)], [0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0]);
  });
});
