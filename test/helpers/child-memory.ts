import { readFile } from 'node:fs/promises';
import WebSocket from 'ws';
import type { ServeProcess } from './cli';

/**
 * The memory a child process holds once idle: it is started with `NODE_OPTIONS=--inspect=127.0.0.1:0`
 * (INSPECTED_ENV), and this asks its inspector for a full garbage collection before reading its resident
 * memory (/proc/<pid>/status VmRSS) and its heap, so garbage not yet collected is not counted as held.
 */
export const INSPECTED_ENV = { NODE_OPTIONS: '--inspect=127.0.0.1:0' };

export interface HeldMemory {
  /** Resident memory, MB. */
  rssMb: number;
  /** V8's heap in use plus memory outside it that JavaScript objects hold (buffers), MB. */
  heapMb: number;
}

export class ChildMemory {
  private nextId = 0;
  private readonly waiting = new Map<number, (result: unknown) => void>();

  private constructor(
    private readonly socket: WebSocket,
    private readonly pid: number,
  ) {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { id?: number; result?: unknown };
      if (message.id !== undefined) this.waiting.get(message.id)?.(message.result);
    });
  }

  /** Connects to the inspector the child announced on its standard error (`Debugger listening on ws://...`). */
  static async attach(proc: ServeProcess): Promise<ChildMemory> {
    const url = /Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/[\w-]+)/.exec(proc.output())?.[1];
    if (!url) throw new Error(`the child announced no inspector:\n${proc.output()}`);
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    return new ChildMemory(socket, proc.child.pid!);
  }

  private call(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = (this.nextId += 1);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`inspector: no answer to ${method}`)), 30_000);
      this.waiting.set(id, (result) => {
        clearTimeout(timer);
        this.waiting.delete(id);
        resolve(result);
      });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** After a full garbage collection. */
  async held(): Promise<HeldMemory> {
    await this.call('HeapProfiler.collectGarbage');
    const evaluated = (await this.call('Runtime.evaluate', {
      expression: 'JSON.stringify((({ heapUsed, external }) => ({ heapUsed, external }))(process.memoryUsage()))',
      returnByValue: true,
    })) as { result: { value: string } };
    const { heapUsed, external } = JSON.parse(evaluated.result.value) as { heapUsed: number; external: number };
    const status = await readFile(`/proc/${this.pid}/status`, 'utf8');
    const rssKb = Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]);
    return { rssMb: rssKb / 1024, heapMb: (heapUsed + external) / 1024 / 1024 };
  }

  close(): void {
    this.socket.close();
  }
}
