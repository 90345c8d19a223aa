// The relay link's status text (last_error, shown to clients and logged) quotes what a relay answered: its
// registration refusal's `code` and its close reason. Cut by whole characters and well-formed, whatever the
// relay sent (s23, polish23). A fake relay on 127.0.0.1: real HTTP and a real ws socket.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { WebSocketServer } from 'ws';
import { nullLogger } from '../../src/log/logger';
import { RelayLink } from '../../src/transport/relay-link/relay-link';
import { waitFor } from '../helpers/temp';

const PAIR = '\u{1F600}';

/** A relay that answers /register with `register` and closes every machine socket with `close`. */
async function fakeRelay(register: { status: number; body: string }, close?: { code: number; reason: string }): Promise<{ url: string; server: Server }> {
  const server = createServer((_request, response) => {
    response.writeHead(register.status, { 'content-type': 'application/json' });
    response.end(register.body);
  });
  const wss = new WebSocketServer({ server });
  wss.on('connection', (socket) => close && socket.close(close.code, close.reason));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  server.on('close', () => wss.close());
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function lastErrorOf(relay: { url: string; server: Server }): Promise<string> {
  const link = new RelayLink({
    channel: { name: 'relay', type: 'websocket', url: relay.url, auth_token: 'relay-token-0123456789abcdef0123456789' },
    identity: () => Promise.resolve({ machineId: 'm-0123456789abcdef', keyPair: { publicKey: '', secretKey: '' } }),
    clientKeys: {} as never,
    sessions: {} as never,
    logger: nullLogger,
    timing: { baseDelayMs: 60_000, maxDelayMs: 60_000 },
  });
  link.start();
  try {
    const status = await waitFor(() => (link.status().last_error ? link.status() : undefined), 'the link failed', 10_000);
    return status.last_error!;
  } finally {
    link.stop();
    relay.server.closeAllConnections();
    relay.server.close();
  }
}

test("a relay's refusal code with a pair astride the 40-character cut, and a lone surrogate, is shown well-formed", async () => {
  const code = `\\ud800${'x'.repeat(38)}${PAIR}tail`;
  const error = await lastErrorOf(await fakeRelay({ status: 400, body: `{"code":"${code}"}` }));
  assert.ok(error.isWellFormed(), JSON.stringify(error));
  assert.equal(error, `relay refused registration: HTTP 400 \ufffd${'x'.repeat(38)}${PAIR}`);
});

test("a relay's close reason with a pair astride the 80-character cut is shown by whole characters", async () => {
  const error = await lastErrorOf(await fakeRelay({ status: 200, body: '{}' }, { code: 4000, reason: `${'a'.repeat(79)}${PAIR}b` }));
  assert.ok(error.isWellFormed(), JSON.stringify(error));
  assert.equal(error, `relay closed the socket (4000 ${'a'.repeat(79)}${PAIR})`);
});
