import type { ChildProcess } from 'node:child_process';
import { childProcess } from '../../platform/builtins';
import { PassThrough, type Readable } from 'node:stream';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { ReadBuffer } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { mcpSdk } from './mcp-sdk';

/**
 * An MCP server's process seen as the SDK's client transport (newline-delimited JSON-RPC on stdio),
 * plus what the tool source needs to manage it: its pid, how it ended, its stderr, and a kill that
 * takes everything it started with it.
 */
export interface ServerProcess extends Transport {
  readonly pid: number | undefined;
  /** How the process ended ("exited with code 1", "was killed by SIGKILL"), once it has. */
  readonly exitReason: string | undefined;
  /** The server's stderr (piped, never inherited). */
  readonly stderr: Readable;
  /** Stops the process and its children; resolves once it is gone (bounded: a few seconds at most). */
  kill(): Promise<void>;
  /** Last resort at process exit: kills the process tree without waiting. */
  killNow(): void;
}

export interface ServerProcessOptions {
  command: string;
  args: readonly string[];
  env: Record<string, string>;
  cwd?: string;
}

/** The time a server gets to exit on its own once its stdin is closed, and then after SIGTERM. */
const STDIN_GRACE_MS = 500;
const TERM_GRACE_MS = 1_000;
/** After the process exits, how long its stdout may still drain before the pipes are cut. */
const DRAIN_MS = 500;

export function createServerProcess(options: ServerProcessOptions): ServerProcess {
  // POSIX: the server leads its own process group, so one signal reaches everything it spawned (npx →
  // sh → node...). Windows has no groups; there the SDK's transport (cross-spawn finds npx.cmd and
  // friends, which a plain spawn cannot run) and `taskkill /T` do the same job.
  return process.platform === 'win32' ? new WindowsServerProcess(options) : new PosixServerProcess(options);
}

class PosixServerProcess implements ServerProcess {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly stderr = new PassThrough();
  exitReason: string | undefined;

  private child: ChildProcess | undefined;
  private readonly buffer: ReadBuffer = new (mcpSdk().ReadBuffer)();
  private exited = false;
  private closed = false;
  private groupGone = false;
  private readonly closedPromise: Promise<void>;
  private markClosed!: () => void;

  constructor(private readonly options: ServerProcessOptions) {
    this.closedPromise = new Promise((resolve) => (this.markClosed = resolve));
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): Promise<void> {
    if (this.child) throw new Error('already started');
    return new Promise((resolve, reject) => {
      let spawned = false;
      const child = childProcess().spawn(this.options.command, [...this.options.args], {
        cwd: this.options.cwd,
        env: this.options.env,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
        shell: false,
      });
      this.child = child;
      child.once('spawn', () => {
        spawned = true;
        resolve();
      });
      child.on('error', (error) => {
        if (!spawned) {
          this.exited = true;
          this.groupGone = true;
          this.exitReason = 'could not be started';
          reject(error);
          this.finish();
        } else {
          this.onerror?.(error);
        }
      });
      child.once('exit', (code, signal) => {
        this.exited = true;
        this.exitReason = signal ? `was killed by ${signal}` : `exited with code ${code}`;
        // Whatever the server left behind dies with it; then stop waiting on pipes a stray child may hold.
        this.signalGroup('SIGKILL');
        setTimeout(() => this.cutPipes(), DRAIN_MS).unref();
      });
      child.once('close', () => this.finish());
      child.stdout!.on('data', (chunk: Buffer) => this.receive(chunk));
      child.stdout!.on('error', (error) => this.onerror?.(error));
      child.stdin!.on('error', (error) => this.onerror?.(error));
      child.stderr!.on('error', () => {});
      child.stderr!.pipe(this.stderr);
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.child?.stdin;
      if (!stdin || this.exited || !stdin.writable) {
        reject(new Error('Not connected'));
        return;
      }
      if (stdin.write(mcpSdk().serializeMessage(message))) {
        resolve();
        return;
      }
      // Blocked: wait for room, or for the pipe to go away with the process.
      const done = () => {
        stdin.off('drain', done);
        stdin.off('close', done);
        resolve();
      };
      stdin.once('drain', done);
      stdin.once('close', done);
    });
  }

  close(): Promise<void> {
    return this.kill();
  }

  async kill(): Promise<void> {
    if (!this.child || this.closed) return;
    try {
      this.child.stdin?.end();
    } catch {
      // already gone
    }
    if (!(await this.waitClosed(STDIN_GRACE_MS))) {
      this.signalGroup('SIGTERM');
      if (!(await this.waitClosed(TERM_GRACE_MS))) {
        this.signalGroup('SIGKILL');
        if (!(await this.waitClosed(TERM_GRACE_MS))) this.cutPipes();
      }
    }
    // The leader is gone; anything of its group that outlived it (a child that ignores SIGTERM) is not.
    this.signalGroup('SIGKILL');
  }

  killNow(): void {
    this.signalGroup('SIGKILL');
  }

  private receive(chunk: Buffer): void {
    try {
      this.buffer.append(chunk);
    } catch (error) {
      // A message over the buffer limit: the stream cannot be resynchronised.
      this.onerror?.(error as Error);
      void this.kill();
      return;
    }
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.buffer.readMessage();
      } catch (error) {
        // A line that is not JSON-RPC (a server logging to stdout): skipped, reported.
        this.onerror?.(error as Error);
        continue;
      }
      if (message === null) break;
      this.onmessage?.(message);
    }
  }

  private signalGroup(signal: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (!pid || this.groupGone) return;
    try {
      process.kill(-pid, signal);
    } catch (error) {
      // ESRCH: nothing left in the group; the id must not be signalled again (it could be reused).
      if ((error as NodeJS.ErrnoException).code === 'ESRCH') this.groupGone = true;
    }
  }

  private cutPipes(): void {
    if (this.closed || !this.child) return;
    this.child.stdout?.destroy();
    this.child.stderr?.destroy();
    this.child.stdin?.destroy();
    // 'close' follows once the pipes are gone; if the leader itself is still around it was SIGKILLed.
    if (this.exited) setTimeout(() => this.finish(), 50).unref();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.buffer.clear();
    this.stderr.end();
    this.markClosed();
    this.onclose?.();
  }

  private async waitClosed(ms: number): Promise<boolean> {
    if (this.closed) return true;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    try {
      return await Promise.race([this.closedPromise.then(() => true), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }
}

class WindowsServerProcess implements ServerProcess {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  exitReason: string | undefined;
  private readonly inner: StdioClientTransport;
  private closed = false;
  private spawnedPid: number | undefined;

  constructor(options: ServerProcessOptions) {
    this.inner = new (mcpSdk().StdioClientTransport)({
      command: options.command,
      args: [...options.args],
      env: options.env,
      cwd: options.cwd,
      stderr: 'pipe',
    });
    this.inner.onmessage = (message) => this.onmessage?.(message);
    this.inner.onerror = (error) => this.onerror?.(error);
    this.inner.onclose = () => {
      if (this.closed) return;
      this.closed = true;
      this.exitReason ??= 'exited';
      this.onclose?.();
    };
  }

  get pid(): number | undefined {
    return this.inner.pid ?? this.spawnedPid;
  }

  get stderr(): Readable {
    return this.inner.stderr as PassThrough;
  }

  async start(): Promise<void> {
    await this.inner.start();
    this.spawnedPid = this.inner.pid ?? undefined;
  }

  send(message: JSONRPCMessage): Promise<void> {
    return this.inner.send(message);
  }

  close(): Promise<void> {
    return this.kill();
  }

  async kill(): Promise<void> {
    const pid = this.pid;
    if (pid && !this.closed) {
      await new Promise<void>((resolve) => childProcess().execFile('taskkill', ['/pid', String(pid), '/T', '/F'], { windowsHide: true }, () => resolve()));
    }
    await this.inner.close();
  }

  killNow(): void {
    const pid = this.pid;
    if (pid && !this.closed) {
      try {
        process.kill(pid);
      } catch {
        // already gone
      }
    }
  }
}
