import { once } from 'node:events';
import WebSocket from 'ws';

/** What the relay answered instead of upgrading. */
export class UpgradeRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`upgrade refused: ${status} ${body}`);
  }
}

type Waiter = { match: (text: string) => boolean; resolve: (text: string) => void };

/**
 * A real `ws` socket on the relay, playing a client or a machine: keeps what it receives in order, so a
 * test can await "the next frame like this" and check afterwards everything it ever got.
 */
export class RelayPeer {
  /** Every text frame received, in order (consumed or not). */
  readonly received: string[] = [];
  private readonly pending: string[] = [];
  private readonly waiters: Waiter[] = [];
  closed?: { code: number; reason: string };

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data, isBinary) => {
      const text = isBinary ? `<binary ${(data as Buffer).length}>` : data.toString();
      this.received.push(text);
      const index = this.waiters.findIndex((w) => w.match(text));
      if (index >= 0) this.waiters.splice(index, 1)[0].resolve(text);
      else this.pending.push(text);
    });
    socket.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
    });
    socket.on('error', () => {});
  }

  /**
   * Opens a socket; rejects with UpgradeRefused when the relay answers with HTTP instead.
   * `localAddress` (127.0.0.2, 127.0.0.3 ...: all of 127/8 is loopback) plays a client at another address.
   */
  static connect(url: string, headers: Record<string, string> = {}, localAddress?: string): Promise<RelayPeer> {
    // workerd leaves the TCP connection open after a close the Durable Object starts from another
    // socket's event; like browsers (2 s), end it ourselves soon after the closing handshake.
    // (closeTimeout is in ws 8.18+, not yet in @types/ws.)
    const options = { headers, maxPayload: 16 * 1024 * 1024, closeTimeout: 500, localAddress } as WebSocket.ClientOptions;
    const socket = new WebSocket(url, options);
    const peer = new RelayPeer(socket);
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(peer));
      socket.once('unexpected-response', (request, response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk));
        response.on('end', () => {
          request.destroy();
          reject(new UpgradeRefused(response.statusCode ?? 0, body));
        });
      });
      socket.once('error', reject);
    });
  }

  get open(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  send(data: string | Buffer): void {
    this.socket.send(data);
  }

  /** The next received text (already received and not yet taken, or future) matching `match`. */
  next(match: (text: string) => boolean = () => true, timeoutMs = 5_000): Promise<string> {
    const index = this.pending.findIndex(match);
    if (index >= 0) return Promise.resolve(this.pending.splice(index, 1)[0]);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        match,
        resolve: (text) => {
          clearTimeout(timer);
          resolve(text);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(
          new Error(
            `no matching frame within ${timeoutMs} ms; got so far: ${this.received
              .slice(-5)
              .map((t) => t.slice(0, 120))
              .join(' | ')}`,
          ),
        );
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** The next JSON frame matching `match` (non-JSON frames never match). */
  async nextJson<T = Record<string, unknown>>(match: (frame: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<T> {
    const text = await this.next((t) => {
      const frame = parseObject(t);
      return frame !== undefined && match(frame);
    }, timeoutMs);
    return JSON.parse(text) as T;
  }

  /** Received frames that are JSON objects. */
  receivedJson(): Record<string, unknown>[] {
    return this.received.map(parseObject).filter((f): f is Record<string, unknown> => f !== undefined);
  }

  async waitClose(timeoutMs = 10_000): Promise<{ code: number; reason: string }> {
    if (!this.closed) await once(this.socket, 'close', { signal: AbortSignal.timeout(timeoutMs) });
    return this.closed!;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.socket.close();
    await this.waitClose().catch(() => this.socket.terminate());
  }
}

function parseObject(text: string): Record<string, unknown> | undefined {
  if (!text.startsWith('{')) return undefined;
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** A machine on the relay, speaking the multiplexing frames of docs/relay.md. */
export class TestMachine {
  private constructor(readonly peer: RelayPeer) {}

  static async connect(wsOrigin: string, machineId: string, authToken: string): Promise<TestMachine> {
    const peer = await RelayPeer.connect(`${wsOrigin}/ws?machine_id=${machineId}&role=machine`, { authorization: `Bearer ${authToken}` });
    return new TestMachine(peer);
  }

  /** The cid of the next client that opens. */
  async nextOpen(timeoutMs?: number): Promise<string> {
    const frame = await this.peer.nextJson<{ c: string }>((f) => f.t === 'open', timeoutMs);
    return frame.c;
  }

  /** The next data frame from `cid` (any cid when absent). */
  nextData(cid?: string, timeoutMs?: number): Promise<{ c: string; d: string }> {
    return this.peer.nextJson((f) => f.t === 'data' && (cid === undefined || f.c === cid), timeoutMs);
  }

  nextClose(cid: string, timeoutMs?: number): Promise<{ c: string }> {
    return this.peer.nextJson((f) => f.t === 'close' && f.c === cid, timeoutMs);
  }

  sendData(cid: string, d: string): void {
    this.peer.send(JSON.stringify({ t: 'data', c: cid, d }));
  }

  sendClose(cid: string, code?: number, reason?: string): void {
    this.peer.send(JSON.stringify({ t: 'close', c: cid, code, reason }));
  }

  close(): Promise<void> {
    return this.peer.close();
  }
}

/** A relay client: its status frames and the machine's data. */
export class TestRelayClient {
  private constructor(readonly peer: RelayPeer) {}

  /** A client of `machineId`, from `localAddress` when given (see RelayPeer.connect). */
  static async connect(wsOrigin: string, machineId: string, localAddress?: string, headers: Record<string, string> = {}): Promise<TestRelayClient> {
    return new TestRelayClient(await RelayPeer.connect(`${wsOrigin}/ws?machine_id=${machineId}`, headers, localAddress));
  }

  async nextStatus(timeoutMs?: number): Promise<'online' | 'offline'> {
    const frame = await this.peer.nextJson<{ machine: 'online' | 'offline' }>((f) => f.relay === 'status', timeoutMs);
    return frame.machine;
  }

  async nextError(timeoutMs?: number): Promise<{ code: string; error: string }> {
    return this.peer.nextJson((f) => f.relay === 'error', timeoutMs);
  }

  /** The next frame that is not the relay's own. */
  next(timeoutMs?: number): Promise<string> {
    return this.peer.next((t) => !t.startsWith('{"relay"'), timeoutMs);
  }

  send(data: string | Buffer): void {
    this.peer.send(data);
  }

  close(): Promise<void> {
    return this.peer.close();
  }
}
