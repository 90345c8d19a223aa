/**
 * A stand-in for the service's Web Push commands (docs/protocol.md, "Web Push"), for the phone page's
 * tests while the service side is built on another branch: a WebSocket proxy on 127.0.0.1 in front of
 * the real service. Every frame goes through to the service; only when the service answers a push
 * command with `unknown command type` does the stand-in answer it instead, by the protocol's rules. Once
 * the service knows the commands its answers go through untouched, so the same tests run against the
 * real commands. It also records each command a client sent and the answer it got.
 */
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';

type Frame = Record<string, unknown>;

const PUSH_COMMANDS = new Set(['push_info', 'push_subscribe', 'push_settings', 'push_unsubscribe', 'list_push_devices', 'push_test', 'client_state']);

export interface PushStandIn {
  /** The proxy's WebSocket URL: give it to the page instead of the service's. */
  wsUrl: string;
  /** Each command a client sent through the proxy, with the answer it got (in order). */
  exchanges: { command: Frame; answer: Frame }[];
  /** Whether the stand-in answered at least one command (the service did not know it). */
  readonly used: boolean;
  close(): Promise<void>;
}

interface Device {
  device_id: string;
  device_name: string;
  created_at: string;
  endpoint_origin: string;
  events: Record<'prompt' | 'finished' | 'failed' | 'webhook', boolean>;
  content_blind: boolean;
  last_delivery: null;
  failures: number;
  subscription: unknown;
}

export async function startPushStandIn(serviceWsUrl: string): Promise<PushStandIn> {
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const jwk = publicKey.export({ format: 'jwk' });
  const vapidPublicKey = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, 'base64url'), Buffer.from(jwk.y!, 'base64url')]).toString('base64url');
  const devices = new Map<string, Device>();
  const exchanges: PushStandIn['exchanges'] = [];
  let used = false;

  const fail = (error: string) => ({ status: 'error', error, code: 'invalid_request' });
  const ok = (data: object) => ({ status: 'ok', data });
  const publicDevice = ({ subscription: _subscription, ...device }: Device) => device;
  const answerFor = (command: Frame): Frame => {
    const id = typeof command.device_id === 'string' ? command.device_id : undefined;
    switch (command.type) {
      case 'push_info':
        return ok({ vapid_public_key: vapidPublicKey });
      case 'push_subscribe': {
        const subscription = command.subscription as { endpoint?: unknown; keys?: { p256dh?: unknown; auth?: unknown } } | undefined;
        if (!id || typeof command.device_name !== 'string') return fail('invalid push_subscribe: device_id and device_name are required');
        if (typeof subscription?.endpoint !== 'string' || !subscription.endpoint.startsWith('https:')) return fail('invalid push_subscribe: subscription.endpoint must be an https: URL');
        if (typeof subscription.keys?.p256dh !== 'string' || typeof subscription.keys.auth !== 'string') return fail('invalid push_subscribe: subscription.keys are required');
        const device: Device = {
          device_id: id,
          device_name: command.device_name,
          created_at: devices.get(id)?.created_at ?? new Date().toISOString(),
          endpoint_origin: new URL(subscription.endpoint).origin,
          events: { prompt: true, finished: true, failed: true, webhook: true, ...(command.events as object | undefined) },
          content_blind: command.content_blind === true,
          last_delivery: null,
          failures: 0,
          subscription,
        };
        devices.set(id, device);
        return ok({ device: publicDevice(device) });
      }
      case 'push_settings': {
        const device = id ? devices.get(id) : undefined;
        if (!device) return { status: 'error', error: 'no such device', code: 'not_found' };
        if (typeof command.device_name === 'string') device.device_name = command.device_name;
        if (command.events) device.events = { ...device.events, ...(command.events as object) };
        if (typeof command.content_blind === 'boolean') device.content_blind = command.content_blind;
        return ok({ device: publicDevice(device) });
      }
      case 'push_unsubscribe':
        return ok({ removed: id ? devices.delete(id) : false });
      case 'list_push_devices':
        return ok({ devices: [...devices.values()].map(publicDevice) });
      case 'push_test':
        return ok({ results: [...devices.values()].filter((d) => !id || d.device_id === id).map((d) => ({ device_id: d.device_id, ok: false, status: null, error: 'no push service in this test' })) });
      case 'client_state':
        return typeof command.visible === 'boolean' ? ok({}) : fail('invalid client_state: visible must be a boolean');
      default:
        return fail('not a push command');
    }
  };

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
      let text = data.toString();
      try {
        const frame = JSON.parse(text) as Frame;
        const command = frame.id !== undefined ? asked.get(String(frame.id)) : undefined;
        if (command) {
          asked.delete(String(frame.id));
          let answer = frame;
          if (PUSH_COMMANDS.has(String(command.type)) && frame.status === 'error' && /unknown command type/.test(String(frame.error))) {
            used = true;
            answer = { ...answerFor(command), id: frame.id };
            text = JSON.stringify(answer);
          }
          exchanges.push({ command, answer });
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
    get used() {
      return used;
    },
    close: async () => {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
