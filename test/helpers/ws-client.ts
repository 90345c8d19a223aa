import WebSocket from 'ws';

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
 * A test client of the service's WebSocket: sends frames, and hands out the frames it receives in
 * order, so a test can wait for "the next response with id X" or "the next event of kind Y".
 */
export class TestClient {
  private readonly inbox = new FrameInbox();
  readonly frames = this.inbox.frames;
  closed?: { code: number; reason: string };
  private closeWaiters: ((c: { code: number; reason: string }) => void)[] = [];
  private nextId = 1;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      this.inbox.push(JSON.parse(data.toString()) as Frame);
    });
    socket.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
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

  send(frame: Frame | string | Buffer): void {
    this.socket.send(typeof frame === 'string' || Buffer.isBuffer(frame) ? frame : JSON.stringify(frame));
  }

  /** The next received frame (already received or future) matching `match`. */
  next(match: (frame: Frame) => boolean, timeoutMs = 10_000): Promise<Frame> {
    return this.inbox.next(match, timeoutMs);
  }

  /** Sends a command with a fresh id (unless it has one) and waits for its response. */
  async request(frame: Frame, timeoutMs?: number): Promise<Frame> {
    const id = frame.id ?? (frame.type === 'auth' ? undefined : `r${this.nextId++}`);
    this.send(id === undefined ? frame : { ...frame, id });
    return this.next((f) => 'status' in f && (id === undefined || f.id === id), timeoutMs);
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
