import assert from 'node:assert/strict';
import type { AddressInfo, Socket } from 'node:net';
import { describe, test } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { envelopeText, envelopeWire, jsonWithField, keptForTheRun, ok, sharedResult, withDataText } from '../../src/protocol';
import { textSender, textFrame } from '../../src/transport/connections/ws-frames';

/** One frame through the socket's sender (as the service sends: made once per connection). */
const senders = new WeakMap<WebSocket, ReturnType<typeof textSender>>();
function sendText(socket: WebSocket, text: string, shared = false): void {
  let send = senders.get(socket);
  if (!send) senders.set(socket, (send = textSender(socket)));
  send(text, shared);
}

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
    clientsByPort.set(rawOf(client).localPort!, client);
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

/** The server socket's TCP socket (what sendText writes to). */
const rawOf = (socket: WebSocket) => (socket as unknown as { _socket: Socket })._socket;

/** Calls `seen` with what each write hands the TCP socket: one chunk (`_write`), or several at once (`_writev`). */
function onWrites(raw: Socket, seen: (chunks: unknown[], batched: boolean) => void): void {
  const target = raw as unknown as { _write: (chunk: unknown, ...a: unknown[]) => void; _writev: (list: { chunk: unknown }[], cb: unknown) => void };
  const [write, writev] = [target._write, target._writev];
  target._write = function (chunk: unknown, ...args: unknown[]) {
    seen([chunk], false);
    return write.call(this, chunk, ...args);
  };
  target._writev = function (list: { chunk: unknown }[], cb: unknown) {
    seen(
      list.map(({ chunk }) => chunk),
      true,
    );
    return writev.call(this, list, cb);
  };
}

/** Counts the writes handed to the TCP socket: `_write` for one buffer, `_writev` for several at once. */
function countWrites(raw: Socket): { single: number; batches: number[] } {
  const counted = { single: 0, batches: [] as number[] };
  onWrites(raw, (chunks, batched) => (batched ? counted.batches.push(chunks.length) : (counted.single += 1)));
  return counted;
}

/** The chunks handed to a TCP socket, in order. */
function recordChunks(raw: Socket): unknown[] {
  const chunks: unknown[] = [];
  onWrites(raw, (written) => chunks.push(...written));
  return chunks;
}

/**
 * The client end of a server socket (found by its port): what it received, its raw TCP socket, and its
 * close code and reason once closed.
 */
const clientsByPort = new Map<number, WebSocket>();
async function clientOf(socket: WebSocket): Promise<{ received: string[]; raw: Socket; closed: Promise<[number, string]> }> {
  const client = clientsByPort.get(rawOf(socket).remotePort!)!;
  const received: string[] = [];
  client.on('message', (data) => received.push(data.toString()));
  const closed = new Promise<[number, string]>((resolve) => client.once('close', (code, reason) => resolve([code, reason.toString()])));
  return { received, raw: rawOf(client), closed };
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

  test("several events to many sockets in one run, the sender's own copies among them: each event's frame is made once for all (issue 25)", async () => {
    await withSockets(5, {}, async (sockets, received) => {
      // What each socket's TCP socket is handed, by identity.
      const written = sockets.map((socket) => recordChunks(rawOf(socket)));
      // A provider's read holding three pieces: every follower gets the same three texts, the sender (the
      // third socket, in the middle of the order) its own copies (with its request's id) in between.
      const events = [1, 2, 3].map((n) => JSON.stringify({ event: 'chat.delta', delta: `piece ${n}`, seq: n }));
      const own = (n: number) => JSON.stringify({ event: 'chat.delta', delta: `piece ${n}`, seq: n, id: 'r1' });
      sockets.forEach((socket, i) => {
        for (const [n, event] of events.entries()) sendText(socket, i === 2 ? own(n + 1) : event, true);
      });
      await until(() => received.every((mine) => mine.length === 3));
      for (const [i, mine] of received.entries()) assert.deepEqual(mine, i === 2 ? [1, 2, 3].map(own) : events);
      const followers = written.filter((_chunks, i) => i !== 2);
      for (const n of [0, 1, 2]) {
        const frames = new Set(followers.map((chunks) => chunks[n]));
        assert.equal(frames.size, 1, `piece ${n + 1}: one frame for the four followers, not ${frames.size}`);
      }
    });
  });

  test("what a fan-out makes once (an event's text, its frame) is made once a run for each of its events, however many (issue 25)", async () => {
    const made: string[] = [];
    const kept = keptForTheRun((key: { n: number }) => (made.push(`made ${key.n}`), `text ${key.n}`));
    const events = [1, 2, 3, 4, 5].map((n) => ({ n }));
    for (let follower = 0; follower < 10; follower += 1) for (const event of events) assert.equal(kept(event), `text ${event.n}`);
    assert.deepEqual(made, ['made 1', 'made 2', 'made 3', 'made 4', 'made 5']);
    // Dropped at the run's end: a later run makes them again (nothing is held after it was sent).
    await Promise.resolve();
    kept(events[0]!);
    assert.deepEqual(made.slice(5), ['made 1']);
  });

  test('a connection with an extension (compression) is sent to by ws itself', async () => {
    await withSockets(1, { perMessageDeflate: true }, async ([socket], [received]) => {
      assert.notEqual(socket!.extensions, '');
      sendText(socket!, 'compressed '.repeat(100));
      await until(() => received!.length === 1);
      assert.deepEqual(received, ['compressed '.repeat(100)]);
    });
  });

  test("an export piece's answer, its JSON in bytes (any Uint8Array, not only a Buffer), reaches a connection ws sends to (compression) as its text", async () => {
    await withSockets(1, { perMessageDeflate: true }, async ([socket], [received]) => {
      const result = { text: 'é "😀" \\ \u0001', next_offset: null };
      const answer = ok(withDataText(result, jsonWithField(result, 'text', new TextEncoder().encode(JSON.stringify(result.text)))), 'r1');
      textSender(socket!)(envelopeWire(answer));
      await until(() => received!.length === 1);
      assert.deepEqual(received, [JSON.stringify(ok(result, 'r1'))]);
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

  test("frames of one tick to one socket go out in two writes, in order with ws's own frames", async () => {
    await withSockets(2, {}, async ([one, two], [toOne, toTwo]) => {
      const writes = countWrites(rawOf(one!));
      const expected: string[] = [];
      for (let i = 0; i < 6; i += 1) {
        sendText(one!, `frame ${i}`, i % 2 === 0);
        expected.push(`frame ${i}`);
        if (i === 2) {
          one!.send('ws frame');
          one!.ping();
          expected.push('ws frame');
        }
        // Another socket between them: each socket's frames are batched on their own.
        sendText(two!, `other ${i}`);
      }
      await until(() => toOne!.length === expected.length && toTwo!.length === 6);
      assert.deepEqual(toOne, expected);
      assert.deepEqual(toTwo, ['other 0', 'other 1', 'other 2', 'other 3', 'other 4', 'other 5']);
      // The first frame at once, the rest (ws's frame and ping too, in ws's own pieces) together at the tick's end.
      assert.equal(writes.single, 1);
      assert.equal(writes.batches.length, 1);
      assert.ok(writes.batches[0]! >= 5 + 2, `one batch of our 5 frames and ws's: ${writes.batches[0]}`);
      const batch = writes.batches[0];

      // A later tick starts afresh: its first frame goes out at once again.
      sendText(one!, 'next tick');
      await until(() => toOne!.length === expected.length + 1);
      assert.deepEqual(writes, { single: 2, batches: [batch] });
    });
  });

  test('a close in the middle of a tick goes out after the frames sent before it, and nothing after it', async () => {
    await withSockets(1, {}, async ([socket]) => {
      const client = await clientOf(socket!);
      sendText(socket!, 'a');
      sendText(socket!, 'b');
      socket!.close(4000, 'done');
      sendText(socket!, 'after close');
      const [code, reason] = await client.closed;
      assert.deepEqual(client.received, ['a', 'b']);
      assert.deepEqual([code, reason], [4000, 'done']);
    });
  });

  test('a socket terminated in the middle of a tick drops its corked frames without an error', async () => {
    await withSockets(1, {}, async ([socket]) => {
      const client = await clientOf(socket!);
      const errors: Error[] = [];
      rawOf(socket!).on('error', (error) => errors.push(error));
      sendText(socket!, 'a');
      sendText(socket!, 'b');
      socket!.terminate();
      const [code] = await client.closed;
      assert.equal(code, 1006);
      assert.deepEqual(errors, []);
      // What went out before the end is whole and in order; the corked rest is gone with the socket.
      assert.deepEqual(client.received, ['a', 'b'].slice(0, client.received.length));
    });
  });

  test('a client that stops reading holds the frames in order until it reads again (backpressure)', async () => {
    await withSockets(1, {}, async ([socket]) => {
      const client = await clientOf(socket!);
      client.raw.pause();
      const raw = rawOf(socket!);
      const piece = 'p'.repeat(64 * 1024);
      let sent = 0;
      let heldBack = false;
      // Ticks of several frames each until the kernel's buffers are full and the rest waits in the socket.
      // Bounded (50 MB): the kernel's buffers of a loopback connection hold a few MB.
      while (sent < 800 && !(heldBack = raw.writableLength > 4 * piece.length)) {
        for (let i = 0; i < 8; i += 1) sendText(socket!, `${sent++}:${piece}`);
        await new Promise((resolve) => setImmediate(resolve));
      }
      assert.ok(heldBack, 'the socket held frames back');
      client.raw.resume();
      await until(() => client.received.length === sent);
      assert.deepEqual(
        client.received.map((text) => text.slice(0, text.indexOf(':'))),
        Array.from({ length: sent }, (_, i) => String(i)),
      );
      assert.ok(client.received.every((text) => text.endsWith(piece)));
    });
  });

  test("a reply repeating the last reply's text goes out in the same frame; another of the same length does not", async () => {
    await withSockets(2, {}, async ([one, two], [toOne, toTwo]) => {
      const written: unknown[] = [];
      for (const socket of [one!, two!]) {
        const raw = rawOf(socket) as unknown as { write: (chunk: unknown, ...rest: unknown[]) => boolean };
        const write = raw.write.bind(raw);
        raw.write = (chunk, ...rest) => (written.push(chunk), write(chunk, ...rest));
      }
      // A shared answer without an id (get_config's, say): the only reply whose frame is kept.
      const reply = envelopeText({ status: 'ok', data: sharedResult({ model: 'ü'.repeat(100) }) });
      const sameLength = reply.replace('ü', 'é');
      sendText(one!, reply);
      sendText(two!, reply);
      await new Promise((resolve) => setImmediate(resolve));
      sendText(one!, sameLength);
      sendText(one!, reply);
      await until(() => toOne!.length === 3 && toTwo!.length === 1);
      assert.deepEqual(toOne, [reply, sameLength, reply]);
      assert.deepEqual(toTwo, [reply]);
      assert.equal(written.length, 4);
      assert.equal(written[1], written[0], 'the second socket is written the same frame');
      assert.notEqual(written[2], written[0]);
      assert.notEqual(written[3], written[2]);
    });
  });

  test("a reply that is not a shared answer's (a pairing's device token) is never kept: its frame is made each time", async () => {
    await withSockets(1, {}, async ([one], [toOne]) => {
      const written: unknown[] = [];
      const raw = rawOf(one!) as unknown as { write: (chunk: unknown, ...rest: unknown[]) => boolean };
      const write = raw.write.bind(raw);
      raw.write = (chunk, ...rest) => (written.push(chunk), write(chunk, ...rest));
      const hello = JSON.stringify({ status: 'ok', data: { device_token: 'secret-device-token' } });
      sendText(one!, hello);
      await new Promise((resolve) => setImmediate(resolve));
      sendText(one!, hello);
      await until(() => toOne!.length === 2);
      assert.deepEqual(toOne, [hello, hello]);
      assert.notEqual(written[1], written[0], 'a reply that is no shared answer was kept (its frame reused)');
    });
  });

  test('the header is the RFC 6455 one for each length class', () => {
    assert.deepEqual([...textFrame('ab')], [0x81, 2, 0x61, 0x62]);
    assert.deepEqual([...textFrame('x'.repeat(126)).subarray(0, 4)], [0x81, 126, 0, 126]);
    assert.deepEqual([...textFrame('x'.repeat(65_536)).subarray(0, 10)], [0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0]);
  });
});
