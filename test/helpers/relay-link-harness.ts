/**
 * Real parts for relay tests: the Node relay of src/relay (in process, on a loopback port), a
 * recording WebSocket/HTTP tap between the service and the relay (every byte the relay forwards to or
 * from the machine), and a relayed client speaking the e2e tunnel with src/tunnel.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { ClientHandshake, type KeyPairText, type SecureChannel } from '../../src/tunnel';
import { nullLogger } from '../../src/log/logger';
import { NodeRelay } from '../../src/relay/node/relay-server';
import { FrameInbox } from './ws-client';

export const RELAY_TOKEN = 'relay-auth-token-0123456789abcdef-RELAY';

type Frame = Record<string, unknown>;

export interface RunningRelay {
  port: number;
  httpUrl: string;
  /** The channel url for service.json. */
  wsUrl: string;
  close(): Promise<void>;
}

export async function startRelay(port = 0, staticDir?: string): Promise<RunningRelay> {
  const relay = new NodeRelay({ authToken: RELAY_TOKEN, log: nullLogger, staticDir });
  const address = await relay.listen(port, '127.0.0.1');
  return {
    port: address.port,
    httpUrl: `http://127.0.0.1:${address.port}`,
    wsUrl: `ws://127.0.0.1:${address.port}/ws`,
    close: () => relay.close(),
  };
}

export interface Tap {
  /** The channel url for service.json (the service talks to the relay through the tap). */
  wsUrl: string;
  /** Every text frame and HTTP body that passed, both directions. */
  seen: string[];
  close(): Promise<void>;
}

/** A recording proxy in front of the relay (HTTP requests and WebSockets, both directions). */
export async function startTap(relayPort: number): Promise<Tap> {
  const seen: string[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      seen.push(body.toString());
      const upstream = http.request({ host: '127.0.0.1', port: relayPort, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        const parts: Buffer[] = [];
        answer.on('data', (c: Buffer) => parts.push(c));
        answer.on('end', () => {
          seen.push(Buffer.concat(parts).toString());
          res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(parts));
        });
      });
      upstream.on('error', () => res.writeHead(502).end());
      upstream.end(body);
    });
  });
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
  server.on('upgrade', (req, socket, head) => {
    const upstream = new WebSocket(`ws://127.0.0.1:${relayPort}${req.url}`, { headers: { authorization: req.headers.authorization ?? '' }, maxPayload: 64 * 1024 * 1024 });
    upstream.on('unexpected-response', (_r, answer) => {
      socket.end(`HTTP/1.1 ${answer.statusCode} Refused\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    });
    upstream.on('error', () => socket.destroy());
    upstream.on('open', () => {
      wss.handleUpgrade(req, socket, head, (downstream) => {
        downstream.on('message', (data, binary) => {
          if (!binary) seen.push(data.toString());
          if (upstream.readyState === WebSocket.OPEN) upstream.send(data, { binary });
        });
        upstream.on('message', (data, binary) => {
          if (!binary) seen.push(data.toString());
          if (downstream.readyState === WebSocket.OPEN) downstream.send(data, { binary });
        });
        const closeCode = (code: number) => (code === 1005 || code === 1006 ? 1000 : code);
        downstream.on('close', (code) => upstream.close(closeCode(code)));
        upstream.on('close', (code) => downstream.close(closeCode(code)));
        downstream.on('error', () => upstream.terminate());
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    wsUrl: `ws://127.0.0.1:${port}/ws`,
    seen,
    close: async () => {
      for (const client of wss.clients) client.terminate();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** A client of the relay speaking the e2e tunnel, then the service protocol inside it. */
export class RelayClient {
  /** Every text frame on this socket, both directions: what the relay sees of this client. */
  readonly raw: string[] = [];
  readonly relayFrames: Frame[] = [];
  private readonly inbox = new FrameInbox();
  private readonly handshakeFrames: string[] = [];
  private handshakeWaiter?: (text: string) => void;
  private closeWaiters: ((c: { code: number; reason: string }) => void)[] = [];
  closed?: { code: number; reason: string };
  channel?: SecureChannel;
  private nextId = 1;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const text = data.toString();
      this.raw.push(text);
      if (text === 'pong') return;
      let parsed: Frame | undefined;
      try {
        parsed = JSON.parse(text) as Frame;
      } catch {
        parsed = undefined;
      }
      if (parsed && typeof parsed.relay === 'string') {
        this.relayFrames.push(parsed);
        return this.deliver(parsed);
      }
      if (!this.channel) {
        if (this.handshakeWaiter) this.handshakeWaiter(text);
        else this.handshakeFrames.push(text);
        return;
      }
      const frame = JSON.parse(this.channel.open(text)) as Frame;
      this.deliver(frame);
    });
    socket.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      for (const waiter of this.closeWaiters) waiter(this.closed);
    });
    socket.on('error', () => {});
  }

  /** `localAddress` (another 127/8 address) plays a client somewhere else. */
  static async connect(url: string, localAddress?: string): Promise<RelayClient> {
    const socket = new WebSocket(url, { localAddress });
    const client = new RelayClient(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return client;
  }

  /** Connects, runs the e2e handshake and authenticates; throws if any step is refused. */
  static async authed(url: string, keyPair: KeyPairText, machineKey: string, token: string, pairingSecret?: string, localAddress?: string): Promise<RelayClient> {
    const client = await RelayClient.connect(url, localAddress);
    await client.handshake(keyPair, machineKey, pairingSecret);
    const reply = await client.request({ type: 'auth', token });
    if (reply.status !== 'ok') throw new Error(`auth failed: ${JSON.stringify(reply)}`);
    return client;
  }

  /** Sends the hello and waits for the welcome; rejects with the close code when the machine refuses. */
  async handshake(keyPair: KeyPairText, machineKey: string, pairingSecret?: string): Promise<void> {
    const hs = new ClientHandshake(keyPair, machineKey, pairingSecret);
    await this.exchange(hs.hello(), (welcome) => hs.complete(welcome));
  }

  /** Sends a hello of the caller's making and opens the channel `complete` makes of the welcome (an attacker's handshake). */
  async exchange(hello: string, complete: (welcome: string) => SecureChannel): Promise<void> {
    this.channel = undefined;
    this.sendRaw(hello);
    const welcome = await new Promise<string>((resolve, reject) => {
      const early = this.handshakeFrames.shift();
      if (early !== undefined) return resolve(early);
      const timer = setTimeout(() => reject(new Error('no welcome')), 10_000);
      this.handshakeWaiter = (text) => {
        clearTimeout(timer);
        this.handshakeWaiter = undefined;
        resolve(text);
      };
      this.closeWaiters.push((c) => {
        clearTimeout(timer);
        reject(new Error(`closed ${c.code} ${c.reason}`));
      });
    });
    this.channel = complete(welcome);
  }

  sendRaw(text: string): void {
    this.raw.push(text);
    this.socket.send(text);
  }

  /** Sends a service frame in the tunnel. */
  send(frame: Frame | string): void {
    this.sendRaw(this.channel!.seal(typeof frame === 'string' ? frame : JSON.stringify(frame)));
  }

  async request(frame: Frame, timeoutMs?: number): Promise<Frame> {
    const id = frame.id ?? (frame.type === 'auth' ? undefined : `r${this.nextId++}`);
    this.send(id === undefined ? frame : { ...frame, id });
    return this.next((f) => 'status' in f && (id === undefined || f.id === id), timeoutMs);
  }

  next(match: (frame: Frame) => boolean, timeoutMs = 10_000): Promise<Frame> {
    return this.inbox.next(match, timeoutMs);
  }

  waitClose(timeoutMs = 15_000): Promise<{ code: number; reason: string }> {
    if (this.closed) return Promise.resolve(this.closed);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('socket did not close')), timeoutMs);
      this.closeWaiters.push((c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
  }

  close(): void {
    this.socket.close();
  }

  private deliver(frame: Frame): void {
    this.inbox.push(frame);
  }
}
