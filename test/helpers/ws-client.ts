import WebSocket from 'ws';
import type { CommandInput } from '../../src/protocol';
import { ProtocolClient } from '../../src/protocol/client';

type Frame = Record<string, unknown>;

/** Received frames, handed out in order to whoever waits for one matching a condition. */
export class FrameInbox {
  readonly frames: Frame[] = [];
  private waiters: { match: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = [];

  push(frame: Frame): void {
    this.frames.push(frame);
    const index = this.waiters.findIndex((w) => w.match(frame));
    if (index >= 0) this.waiters.splice(index, 1)[0].resolve(frame);
  }

  /** The next received frame (already received or future) matching `match`, taken out of the inbox. */
  next(match: (frame: Frame) => boolean, timeoutMs = 10_000): Promise<Frame> {
    const seen = this.frames.find(match);
    if (seen) {
      this.frames.splice(this.frames.indexOf(seen), 1);
      return Promise.resolve(seen);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching frame within ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({
        match,
        resolve: (frame) => {
          clearTimeout(timer);
          this.frames.splice(this.frames.indexOf(frame), 1);
          resolve(frame);
        },
      });
    });
  }
}

/**
 * A test client of the service's WebSocket: the shared protocol client (src/protocol/client.ts) with raw
 * access kept for attack tests (`send` of any text or bytes). Requests go through the shared client;
 * every other frame it receives is handed out in order, so a test can wait for "the next event of kind Y".
 */
export class TestClient {
  private readonly inbox = new FrameInbox();
  readonly frames = this.inbox.frames;
  closed?: { code: number; reason: string };
  private closeWaiters: ((c: { code: number; reason: string }) => void)[] = [];
  private readonly client = new ProtocolClient({ send: (text) => this.socket.send(text) }, { idPrefix: 'r', timeoutMs: 10_000 });

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const text = data.toString();
      const received = this.client.receive(text);
      // Not a JSON object: kept as parsed (and a test still fails loudly on text that is not JSON).
      if (!received) this.inbox.push(JSON.parse(text) as Frame);
      else if (!received.answered) this.inbox.push(received.frame);
    });
    socket.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.client.closed(`the socket closed (${code})`);
      for (const waiter of this.closeWaiters) waiter(this.closed);
    });
    socket.on('error', () => {});
  }

  static async connect(url: string): Promise<TestClient> {
    const socket = new WebSocket(url);
    const client = new TestClient(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
      socket.once('close', () => resolve());
    });
    return client;
  }

  /** Connects and authenticates; throws unless the service accepts the token. */
  static async authed(url: string, token: string): Promise<TestClient> {
    const client = await TestClient.connect(url);
    const reply = await client.request({ type: 'auth', token });
    if (reply.status !== 'ok') throw new Error(`auth failed: ${JSON.stringify(reply)}`);
    return client;
  }

  /** Raw text, bytes or a frame as it is (no id added): for malformed-input and attack tests. */
  send(frame: Frame | string | Buffer): void {
    this.socket.send(typeof frame === 'string' || Buffer.isBuffer(frame) ? frame : JSON.stringify(frame));
  }

  /** The next received frame (already received or future) matching `match`. */
  next(match: (frame: Frame) => boolean, timeoutMs = 10_000): Promise<Frame> {
    return this.inbox.next(match, timeoutMs);
  }

  /**
   * Sends a command with a fresh id (unless it has one) and waits for its response. `auth` without an id
   * goes as it is (tests check the bare handshake) and takes the next response.
   */
  async request(frame: Frame, timeoutMs?: number): Promise<Frame> {
    if (frame.id === undefined && frame.type === 'auth') {
      this.send(frame);
      return this.next((f) => 'status' in f, timeoutMs);
    }
    // An answer to this id that came before (a frame sent raw with the same id) is taken first, as it always was.
    const seen = this.frames.find((f) => 'status' in f && f.id === frame.id && frame.id !== undefined);
    if (seen) {
      this.send(frame);
      this.frames.splice(this.frames.indexOf(seen), 1);
      return seen;
    }
    // Test frames may be deliberately invalid: the service, not the type, judges them.
    return (await this.client.request(frame as CommandInput, timeoutMs)) as Frame;
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
}
