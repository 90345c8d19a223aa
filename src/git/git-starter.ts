// Where git processes are started from: a small Node process of our own, started once, that starts each
// git for the service and relays its output. Starting a process is a fork(), which copies the page tables
// of the process that starts it and holds its event loop meanwhile: from the service (180-250 MB resident)
// 6-40 ms a git on this 2-core machine, the streamed chat's longest stall every 10 s of chatting (the turn's
// note asks git's status); from the starter (about 40 MB, and it touches little) a fraction of that, and
// not on the service's loop. Starting git from a worker thread does not help: the fork is of the whole
// process (docs/design.md, "What every command and streamed piece costs"). When the starter cannot run
// (no Node binary to run it with), git is started directly, as before.
import { spawn, type ChildProcess } from 'node:child_process';

/** What a started git reports back; exactly one `onClose` ends a run. */
export interface GitRunHandlers {
  onStdout(chunk: Buffer): void;
  onStderr(chunk: Buffer): void;
  /** `error`: git could not be started (`code` ENOENT: not installed). */
  onClose(code: number | null, signal: NodeJS.Signals | null, error?: { code?: string; message: string }): void;
}

export interface GitRun {
  /** Ends git (SIGTERM), as for a timeout or an output past its cap. */
  kill(): void;
  /**
   * Resolves once git is being started: at once, or when a starter just started is ready (its start, a
   * Node process's, took 0.3-1.3 s on this loaded machine: not git's time, so not counted in its timeout).
   */
  ready: Promise<void>;
}

export interface GitStartRequest {
  args: readonly string[];
  env: NodeJS.ProcessEnv;
  /** Written to git's standard input, which is then closed. */
  input?: string;
}

/**
 * The starter, as plain JavaScript run by `node -e` (no file to find in a bundle, a test or the editor).
 * It says `{ ready }` first. Messages: `{ id, args, env, input }` starts git; `{ kill: id }` ends it. Back: `{ id, out }`, `{ id, err }`
 * (Buffers), then `{ id, code, signal, error }`. The service gone (the channel closed), it exits once its gits
 * have ended: a git the service started finishes as it did when it was the service's own child (a commit
 * under way at a kill -9 completes, as review-kill.test.ts expects).
 */
const STARTER = String.raw`
const { spawn } = require('node:child_process');
const runs = new Map();
const send = (message) => process.connected && process.send(message);
process.on('message', (m) => {
  if (m.kill !== undefined) return void runs.get(m.kill)?.kill('SIGTERM');
  let child;
  try {
    child = spawn('git', m.args, { env: m.env, windowsHide: true, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) {
    return void send({ id: m.id, code: null, signal: null, error: { code: e.code, message: e.message } });
  }
  runs.set(m.id, child);
  let error;
  child.on('error', (e) => (error = { code: e.code, message: e.message }));
  child.stdout.on('data', (out) => send({ id: m.id, out }));
  child.stderr.on('data', (err) => send({ id: m.id, err }));
  child.stdin.on('error', () => undefined);
  child.stdin.end(m.input);
  child.on('close', (code, signal) => (runs.delete(m.id), send({ id: m.id, code, signal, error })));
});
process.send({ ready: true });
`;

/** A starter not ready after this long (a Node start takes 0.3-1.3 s on a loaded 2-core machine) is given up. */
const STARTER_READY_MS = 15_000;

type Reply = { ready?: true; id: number; out?: Uint8Array; err?: Uint8Array; code?: number | null; signal?: NodeJS.Signals | null; error?: { code?: string; message: string } };

/** The starter process and the runs it has been asked for. */
class Starter {
  private readonly runs = new Map<number, GitRunHandlers>();
  private next = 0;
  /** Runs sent before the starter said it was ready: started directly if it never is (none of them started git). */
  private readonly unconfirmed = new Map<number, { request: GitStartRequest; handlers: GitRunHandlers; run: GitRun }>();
  private up = false;
  private ended = false;
  private readonly isReady: Promise<void>;
  private markReady!: () => void;

  private constructor(
    private readonly child: ChildProcess,
    private readonly onGone: (started: boolean) => void,
  ) {
    this.isReady = new Promise((resolve) => (this.markReady = resolve));
    child.on('message', (reply: Reply) => this.reply(reply));
    child.once('error', () => this.gone());
    child.once('exit', () => this.gone());
    child.unref();
    this.idle();
    // Bounded: a starter not ready by then is given up, and git started directly from then on.
    setTimeout(() => this.up || child.kill('SIGKILL'), STARTER_READY_MS).unref();
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  static start(onGone: (started: boolean) => void): Starter {
    // Its own environment: no NODE_OPTIONS (a test's loader or an --inspect port is not for it), and an
    // editor's Electron binary runs as plain Node. Each git gets the environment its run names.
    const env: NodeJS.ProcessEnv = { ...process.env, ELECTRON_RUN_AS_NODE: '1' };
    delete env.NODE_OPTIONS;
    const child = spawn(process.execPath, ['-e', STARTER], { env, stdio: ['ignore', 'ignore', 'ignore', 'ipc'], serialization: 'advanced', windowsHide: true });
    return new Starter(child, onGone);
  }

  run(request: GitStartRequest, handlers: GitRunHandlers): GitRun {
    const id = (this.next += 1);
    this.runs.set(id, handlers);
    const run: GitRun = { kill: () => void (this.runs.has(id) && this.child.connected && this.child.send({ kill: id })), ready: this.isReady };
    if (!this.up) this.unconfirmed.set(id, { request, handlers, run });
    // Kept alive while a run is out, as git's own pipes would keep it.
    this.child.channel?.ref();
    this.child.send({ id, args: request.args, env: request.env, input: request.input });
    return run;
  }

  private reply(reply: Reply): void {
    if (reply.ready) {
      // Everything sent is read from now on: a run it was sent may have started git.
      this.up = true;
      this.unconfirmed.clear();
      this.markReady();
      return;
    }
    const handlers = this.runs.get(reply.id);
    if (!handlers) return;
    if (reply.out) handlers.onStdout(Buffer.from(reply.out.buffer, reply.out.byteOffset, reply.out.byteLength));
    else if (reply.err) handlers.onStderr(Buffer.from(reply.err.buffer, reply.err.byteOffset, reply.err.byteLength));
    else {
      this.runs.delete(reply.id);
      handlers.onClose(reply.code ?? null, reply.signal ?? null, reply.error);
      this.idle();
    }
  }

  private idle(): void {
    if (this.runs.size === 0) this.child.channel?.unref();
  }

  private gone(): void {
    if (this.ended) return;
    this.ended = true;
    this.child.removeAllListeners('message');
    this.onGone(this.up);
    if (!this.up) {
      // It never ran: nothing was started, so its runs are started directly.
      for (const [id, { request, handlers, run }] of this.unconfirmed) {
        this.runs.delete(id);
        run.kill = startDirectly(request, handlers).kill;
      }
    }
    this.markReady();
    // It ended under its runs (killed): whether their git ran is unknown, so they fail rather than run twice.
    for (const handlers of this.runs.values()) handlers.onClose(null, null, { message: 'the process that starts git ended' });
    this.runs.clear();
  }
}

function startDirectly(request: GitStartRequest, handlers: GitRunHandlers): GitRun {
  const child = spawn('git', request.args, { windowsHide: true, env: request.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let failed: NodeJS.ErrnoException | undefined;
  child.on('error', (error: NodeJS.ErrnoException) => (failed = error));
  child.stdout.on('data', (chunk: Buffer) => handlers.onStdout(chunk));
  child.stderr.on('data', (chunk: Buffer) => handlers.onStderr(chunk));
  child.stdin.on('error', () => undefined); // git may exit before it reads its input (EPIPE): its exit tells.
  child.on('close', (code, signal) => handlers.onClose(code, signal, failed && { code: failed.code, message: failed.message }));
  // Nothing to read: git sees the end of its input at once rather than waiting on the service's.
  child.stdin.end(request.input);
  return { kill: () => child.kill('SIGTERM'), ready: Promise.resolve() };
}

let starter: Starter | undefined;
/** The starter could not run here: git is started directly from now on. */
let direct = false;

function starterGone(started: boolean): void {
  starter = undefined;
  if (!started) direct = true;
}

/**
 * Starts git (run-git.ts's one way to). `start` is replaceable so that tests can count the gits a
 * service starts. The starter is started by `prepare` (the service, once listening) or at the first
 * run, and again after it ended; it ends with the service's process.
 */
export const gitStarter = {
  start(request: GitStartRequest, handlers: GitRunHandlers): GitRun {
    if (direct) return startDirectly(request, handlers);
    starter ??= Starter.start(starterGone);
    return starter.run(request, handlers);
  },

  /**
   * Starts the starter ahead of the first git: its own start (a Node process's, 0.3-1.3 s on a loaded
   * machine) then runs beside the store's open and the warm-up, not in front of the warm-up's git
   * status, which a chat sent one second after start waited for (issue 25). Keeps nothing alive.
   */
  prepare(): void {
    if (!direct) starter ??= Starter.start(starterGone);
  },
};

/** The starter's process id while it runs (tests: a starter that ended is replaced). */
export function gitStarterPid(): number | undefined {
  return direct ? undefined : starter?.pid;
}
