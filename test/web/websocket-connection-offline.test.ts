/**
 * The phone's connection when the network goes away (src/web/websocket-connection.ts), with sockets whose
 * close handshake never finishes: what a phone that lost its network sees, and what Chromium's offline
 * mode does to an open WebSocket (frames from the service are no longer delivered, so the close event may
 * come only after a long timeout). The page must show it is offline at once and reconnect when the
 * network is back, without waiting for that close event.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WebSocketConnection } from '../../src/web/websocket-connection';
import type { Wire } from '../../src/web/wire';
import { waitFor } from '../helpers/temp';

/** A socket that records what is sent and never fires `close` by itself (its handshake cannot finish). */
class StuckSocket extends EventTarget {
  readyState = 0;
  readonly sent: string[] = [];
  closeCalls = 0;
  send(text: string): void {
    this.sent.push(text);
  }
  close(): void {
    this.closeCalls += 1;
    this.readyState = 2; // CLOSING, and it stays so.
  }
  open(): void {
    this.readyState = 1;
    this.dispatchEvent(new Event('open'));
  }
  /** The page's `auth` frame. */
  auth(): { id: string; type: string; token?: string; pairing_secret?: string } {
    return JSON.parse(this.sent.find((text) => text.includes('"auth"'))!) as never;
  }
  /** Opens, and answers the page's `auth` frame. */
  openAndAccept(): void {
    this.open();
    this.deliver({ id: this.auth().id, type: 'auth', status: 'ok', data: {} });
  }
  deliver(frame: Record<string, unknown>): void {
    const event = new Event('message') as Event & { data: string };
    event.data = JSON.stringify(frame);
    this.dispatchEvent(event);
  }
}

const globals = globalThis as unknown as Record<string, unknown>;
const browserWindow = new EventTarget();
globals.window = browserWindow;
globals.document = Object.assign(new EventTarget(), { visibilityState: 'visible' });
globals.WebSocket ??= { CONNECTING: 0, OPEN: 1 };

const settle = () => new Promise((resolve) => setImmediate(resolve));

function connect(options: Partial<ConstructorParameters<typeof WebSocketConnection>[0]> = {}): { connection: WebSocketConnection; sockets: StuckSocket[] } {
  const sockets: StuckSocket[] = [];
  const connection = new WebSocketConnection({
    url: 'ws://127.0.0.1:1/',
    token: 'device-token',
    // A long backoff: only the network's coming back may reconnect within this test.
    baseDelayMs: 60_000,
    maxDelayMs: 60_000,
    ...options,
    createSocket: () => {
      const socket = new StuckSocket();
      sockets.push(socket);
      return socket as unknown as WebSocket;
    },
  });
  return { connection, sockets };
}

test('going offline shows the connection closed at once, though the socket never finishes closing; requests fail instead of waiting', async () => {
  const { connection, sockets } = connect();
  sockets[0]!.openAndAccept();
  await settle();
  assert.equal(connection.state.state, 'open');
  const waiting = connection.request({ type: 'get_config' });

  browserWindow.dispatchEvent(new Event('offline'));
  assert.equal(sockets[0]!.closeCalls, 1, 'the socket is asked to close');
  assert.notEqual(connection.state.state, 'open', 'the page says it is not connected, without waiting for the close event');
  await assert.rejects(waiting, /connection lost/, 'a request waiting for its answer fails at once');
  await assert.rejects(connection.request({ type: 'get_config' }), /not connected/);

  // A frame the abandoned socket still delivers (a late auth answer, an event) is not this connection's.
  sockets[0]!.deliver({ event: 'message_added', conversation_id: 'c1' });
  assert.notEqual(connection.state.state, 'open');
  connection.close();
});

test('the network back: the page reconnects now, and starts over an attempt made while offline that hangs', async () => {
  const { connection, sockets } = connect();
  sockets[0]!.openAndAccept();
  await settle();
  browserWindow.dispatchEvent(new Event('offline'));
  assert.equal(sockets.length, 1, 'no new attempt while the backoff runs');

  browserWindow.dispatchEvent(new Event('online'));
  assert.equal(sockets.length, 2, 'the backoff is skipped');
  // This attempt hangs (it never opens): the network dropping and coming back again starts it over.
  browserWindow.dispatchEvent(new Event('online'));
  assert.equal(sockets.length, 3, 'a hanging attempt is started over when the network comes back');
  assert.equal(sockets[1]!.closeCalls, 1, 'the hanging attempt is closed');
  sockets[1]!.readyState = 1;
  sockets[1]!.dispatchEvent(new Event('open'));
  assert.equal(sockets[1]!.sent.length, 0, 'the abandoned attempt opening late sends nothing');

  sockets[2]!.openAndAccept();
  await settle();
  assert.equal(connection.state.state, 'open');
  browserWindow.dispatchEvent(new Event('online'));
  assert.equal(sockets.length, 3, 'an open connection is kept when the network says it is back');
  connection.close();
});

// review21a's cases.

test('a spurious "online" while a pairing auth is on its way keeps that socket: the device credential in its answer is kept (the secret is spent)', async () => {
  const tokens: string[] = [];
  const { connection, sockets } = connect({
    token: '',
    pairing: () => ({ pairing_secret: 'one-time', device_id: 'd1', device_name: 'phone' }),
    onDeviceToken: (token) => tokens.push(token),
  });
  sockets[0]!.open();
  const auth = sockets[0]!.auth();
  assert.equal(auth.pairing_secret, 'one-time');
  // The service spends the secret now; before its answer comes, the browser says the network is back.
  browserWindow.dispatchEvent(new Event('online'));
  sockets[0]!.deliver({ id: auth.id, type: 'auth', status: 'ok', data: { authenticated: true, device_token: 'dev-tok', device_id: 'd1' } });
  await settle();
  assert.deepEqual(tokens, ['dev-tok']);
  assert.equal(sockets.length, 1, 'an open attempt is not started over');
  assert.equal(connection.state.state, 'open');
  connection.close();
});

/** A connection open through a wire that pings every 10 ms and calls `silenceMs` without a frame the network gone. */
async function openWithHeartbeat(silenceMs: number): Promise<ReturnType<typeof connect>> {
  const wire: Wire = { heartbeat: { everyMs: 10, silenceMs }, begin: () => true, receive: (text) => ({ kind: 'frame', text }), encode: (text) => text };
  const opened = connect({ createWire: () => wire });
  opened.sockets[0]!.openAndAccept();
  await settle();
  assert.equal(opened.connection.state.state, 'open');
  return opened;
}

test('heartbeat silence on a socket whose close never finishes: the page stops saying it is open, and a waiting request fails', async () => {
  const { connection, sockets } = await openWithHeartbeat(30);
  const failed = assert.rejects(connection.request({ type: 'get_config' }), /connection lost/);
  await waitFor(() => connection.state.state !== 'open', 'the page to see the silence', 5_000, 10);
  await failed;
  const closes = sockets[0]!.closeCalls;
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(sockets[0]!.closeCalls, closes, 'its heartbeat stopped with it');
  connection.close();
});

test('close() (the pairing forgotten) leaves no heartbeat running on a socket that never finishes closing', async () => {
  const { connection, sockets } = await openWithHeartbeat(60_000);
  connection.close();
  const pings = sockets[0]!.sent.length;
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(sockets[0]!.sent.length, pings, 'no ping after close()');
  assert.equal(sockets[0]!.closeCalls, 1);
  assert.equal(connection.state.state, 'closed');
});
