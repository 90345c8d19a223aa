// The shared protocol client (src/protocol/client.ts) over a real `ws` server that answers as a test
// script says: answers matched by id in any order, events, the auth handshake, timeouts, close.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { ProtocolClient } from '../../src/protocol/client';
import { PROTOCOL_VERSION, type ViewEvent } from '../../src/protocol';
import type { ServiceConnection } from '../../src/web/connection';

type Frame = Record<string, unknown>;

/** A ws server handing each received frame to `script`, and a client connected to it. */
async function pair(script: (frame: Frame, reply: (f: Frame) => void, socket: WebSocket) => void) {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  server.on('connection', (socket) => {
    socket.on('message', (data) => script(JSON.parse(data.toString()) as Frame, (f) => socket.send(JSON.stringify(f)), socket));
  });
  const socket = new WebSocket(`ws://127.0.0.1:${(server.address() as AddressInfo).port}`);
  await new Promise((resolve) => socket.once('open', resolve));
  const client = new ProtocolClient({ send: (text) => socket.send(text) }, { idPrefix: 't' });
  socket.on('message', (data) => client.receive(data.toString()));
  socket.on('close', () => client.closed('connection lost'));
  const stop = async () => {
    socket.terminate();
    await new Promise((resolve) => server.close(resolve));
  };
  return { client, socket, stop };
}

test('answers are matched by id even when they come out of order', async () => {
  const held: Frame[] = [];
  const { client, stop } = await pair((frame, reply) => {
    held.push(frame);
    // Answer both once both are in, the second first.
    if (held.length === 2) for (const f of [...held].reverse()) reply({ status: 'ok', data: { deleted: true, of: f.conversation_id }, id: f.id });
  });
  try {
    const first = client.request({ type: 'delete_conversation', conversation_id: 'a' });
    const second = client.request({ type: 'delete_conversation', conversation_id: 'b', id: 'mine' });
    const [a, b] = await Promise.all([first, second]);
    assert.deepEqual(a, { status: 'ok', data: { deleted: true, of: 'a' }, id: 't-1' });
    assert.deepEqual(b, { status: 'ok', data: { deleted: true, of: 'b' }, id: 'mine' });
  } finally {
    await stop();
  }
});

test('the auth handshake sends the token with an id and resolves with the answer; events reach listeners; unmatched answers are handed on', async () => {
  const { client, stop } = await pair((frame, reply) => {
    if (frame.type === 'auth') {
      reply({ event: 'config.changed', fields: ['model'] });
      reply({ status: 'error', code: 'invalid_request', error: 'stray', id: 'nobody' });
      reply(frame.token === 'right' ? { status: 'ok', data: { authenticated: true, expires_in: null }, id: frame.id } : { status: 'error', code: 'unauthorized', error: 'no', id: frame.id });
    }
  });
  try {
    const events: unknown[] = [];
    const unmatched: unknown[] = [];
    client.onEvent((event) => events.push(event));
    client.onUnmatched((envelope) => unmatched.push(envelope));
    const refused = await client.authenticate('wrong');
    assert.equal(refused.status, 'error');
    const accepted = await client.authenticate('right');
    assert.equal(accepted.status, 'ok');
    assert.match(String(accepted.id), /^auth-t-/);
    assert.deepEqual(events, [
      { event: 'config.changed', fields: ['model'] },
      { event: 'config.changed', fields: ['model'] },
    ]);
    assert.equal(unmatched.length, 2);
  } finally {
    await stop();
  }
});

test('the auth handshake tells the service the protocol version this client speaks', async () => {
  const sent: Frame[] = [];
  const { client, stop } = await pair((frame, reply) => {
    sent.push(frame);
    reply({ status: 'ok', data: { authenticated: true, expires_in: null, protocol: PROTOCOL_VERSION, server_build: '0.1.0' }, id: frame.id });
  });
  try {
    assert.equal((await client.authenticate('right')).status, 'ok');
    assert.equal(sent[0].protocol, PROTOCOL_VERSION);
  } finally {
    await stop();
  }
});

test('a request times out when no answer comes, and a late answer is then ignored', async () => {
  let late: (() => void) | undefined;
  const { client, stop } = await pair((frame, reply) => {
    late = () => reply({ status: 'ok', data: { tools: [] }, id: frame.id });
  });
  try {
    const unmatched: unknown[] = [];
    client.onUnmatched((envelope) => unmatched.push(envelope));
    await assert.rejects(client.request({ type: 'list_tools' }, 50), /no answer to list_tools within 50 ms/);
    late!();
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(unmatched.length, 1, "the late answer is nobody's");
  } finally {
    await stop();
  }
});

test('closing rejects every pending request, and later requests at once', async () => {
  const { client, socket, stop } = await pair((frame, _reply, serverSide) => {
    if (frame.type === 'list_tools') serverSide.close();
  });
  try {
    const waiting = client.request({ type: 'get_config' });
    const closing = client.request({ type: 'list_tools' });
    await assert.rejects(waiting, /connection lost/);
    await assert.rejects(closing, /connection lost/);
    assert.equal(socket.readyState, WebSocket.CLOSED);
    assert.ok(client.isClosed);
    await assert.rejects(client.request({ type: 'get_config' }), /connection lost/);
  } finally {
    await stop();
  }
});

test('a reused id is answered in turn; text that is not a JSON object is skipped', async () => {
  const { client, stop } = await pair((frame, reply) => reply({ status: 'ok', data: { cancelled: frame.n === 1 }, id: frame.id }));
  try {
    const one = client.request({ type: 'cancel', id: 'x', n: 1 } as { type: 'cancel'; id: string });
    const two = client.request({ type: 'cancel', id: 'x', n: 2 } as { type: 'cancel'; id: string });
    assert.deepEqual(await one, { status: 'ok', data: { cancelled: true }, id: 'x' });
    assert.deepEqual(await two, { status: 'ok', data: { cancelled: false }, id: 'x' });
    assert.equal(client.receive('not json'), undefined);
    assert.equal(client.receive('[1]'), undefined);
  } finally {
    await stop();
  }
});

test("the shared client answers the chat UI's request signature (a type-level check: `tsc` fails if they drift)", () => {
  const client = new ProtocolClient<ViewEvent>({ send: () => undefined });
  const request: ServiceConnection['request'] = (frame) => client.request(frame);
  assert.equal(typeof request, 'function');
});
