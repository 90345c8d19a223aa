/**
 * A recording proxy for the phone page's tests: a WebSocket proxy on 127.0.0.1 in front of the real
 * service. Every frame goes through untouched, both ways; it records each command a client sent and the
 * answer it got, so a test can check what the page asked (push_subscribe with the browser's
 * subscription, client_state on each visibility change...) and what the service said.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';

type Frame = Record<string, unknown>;

export interface RecordingProxy {
  /** The proxy's WebSocket URL: give it to the page instead of the service's. */
  wsUrl: string;
  /** Each command a client sent through the proxy, with the answer it got (in order). */
  exchanges: { command: Frame; answer: Frame }[];
  close(): Promise<void>;
}

export async function startRecordingProxy(serviceWsUrl: string): Promise<RecordingProxy> {
  const exchanges: RecordingProxy['exchanges'] = [];
  const server = http.createServer();
  const wss = new WebSocketServer({ server, path: '/ws' });
  wss.on('connection', (client) => {
    const upstream = new WebSocket(serviceWsUrl);
    const queued: string[] = [];
    const asked = new Map<string, Frame>();
    upstream.on('open', () => queued.splice(0).forEach((text) => upstream.send(text)));
    client.on('message', (data) => {
      const text = data.toString();
      try {
        const frame = JSON.parse(text) as Frame;
        if (typeof frame.type === 'string' && frame.id !== undefined) asked.set(String(frame.id), frame);
      } catch {
        // Not JSON: the service answers it.
      }
      if (upstream.readyState === WebSocket.OPEN) upstream.send(text);
      else queued.push(text);
    });
    upstream.on('message', (data) => {
      const text = data.toString();
      try {
        const frame = JSON.parse(text) as Frame;
        const command = frame.id !== undefined ? asked.get(String(frame.id)) : undefined;
        if (command) {
          asked.delete(String(frame.id));
          exchanges.push({ command, answer: frame });
        }
      } catch {
        // Passed on as it is.
      }
      client.send(text);
    });
    const closeCode = (code: number) => (code === 1005 || code === 1006 ? 1000 : code);
    upstream.on('close', (code, reason) => client.close(closeCode(code), reason));
    client.on('close', (code, reason) => (upstream.readyState === WebSocket.CONNECTING ? upstream.terminate() : upstream.close(closeCode(code), reason)));
    upstream.on('error', () => client.terminate());
    client.on('error', () => upstream.terminate());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    wsUrl: `ws://127.0.0.1:${port}/ws`,
    exchanges,
    close: async () => {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
