// Where git processes are started from: a small Node process of our own, started once, that starts each
// git for the service and relays its output. Starting a process is a fork(), which copies the page tables
// of the process that starts it and holds its event loop meanwhile: from the service (180-250 MB resident)
// 6-40 ms a git on this 2-core machine, the streamed chat's longest stall every 10 s of chatting (the turn's
// note asks git's status); from the starter (about 40 MB, and it touches little) a fraction of that, and
// not on the service's loop. Starting git from a worker thread does not help: the fork is of the whole
// process (docs/design.md, "What every command and streamed piece costs"). When the starter cannot run
// (no Node binary to run it with), git is started directly for a while and the starter tried again later
// (STARTER_TRIES in all).
import type { ChildProcess } from 'node:child_process';
import { childProcess } from '../platform/builtins';
import { spawnStarter, type ParkedStarter } from './starter-process';

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
  /**
   * The caller's cap on each of stdout and stderr: the starter relays at most one byte more (that byte
   * tells the caller it overflowed) and ends git there, so a git writing without end (a `cat-file` of a
   * big blob) floods neither the channel nor the service's memory.
   */
  maxBytes?: number;
}

/** A starter not ready after this long (a Node start takes 0.3-1.3 s on a loaded 2-core machine) is given up. */
const STARTER_READY_MS = 15_000;
/**
 * A git asked to end that has not ended after this long means the starter does not answer (stopped,
 * hung): it is killed and replaced, and that git ended from here.
 */
const KILL_ANSWER_MS = 5_000;
/** Starters that never got ready before git is started directly for good; after each, direct for this long times the count. */
const STARTER_TRIES = 3;
const STARTER_RETRY_MS = 60_000;

type Reply = {
  ready?: true;
  pong?: number;
  id: number;
  pid?: number;
  out?: Uint8Array;
  err?: Uint8Array;
  code?: number | null;
  signal?: NodeJS.Signals | null;
  error?: { code?: string; message: string };
};

/** The starter process and the runs it has been asked for. */
class Starter {
  private readonly runs = new Map<number, GitRunHandlers>();
  /** The git of each run, once the starter said it started one. */
  private readonly pids = new Map<number, number>();
  /** Pings sent to the starter and what to do when it answers. */
  private readonly pongs = new Map<number, () => void>();
  private next = 0;
  /**
   * Runs asked for before the starter said it was ready: held here, not sent, and sent once it is ready;
   * started directly if it never is. A run is only ever sent to a ready starter, so one that ends can
   * never have started a git that is then started again (a push run twice).
   */
  private readonly waiting = new Map<number, { request: GitStartRequest; handlers: GitRunHandlers; run: GitRun }>();
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

  /** A starter: the one parked at the process's start (starter-process.ts), let go now, or a new one. */
  static start(onGone: (started: boolean) => void, parked?: ParkedStarter): Starter {
    return new Starter(parked?.release() ?? spawnStarter(), onGone);
  }

  run(request: GitStartRequest, handlers: GitRunHandlers): GitRun {
    const id = (this.next += 1);
    this.runs.set(id, handlers);
    const run: GitRun = { kill: () => this.kill(id), ready: this.isReady };
    // Kept alive while a run is out, as git's own pipes would keep it.
    this.child.channel?.ref();
    if (this.up) this.send(id, request);
    else this.waiting.set(id, { request, handlers, run });
    return run;
  }

  private send(id: number, request: GitStartRequest): void {
    this.child.send({ id, args: request.args, env: request.env, input: request.input, maxBytes: request.maxBytes });
  }

  private kill(id: number): void {
    if (!this.runs.has(id)) return;
    if (this.waiting.delete(id)) {
      // Never sent: no git to end.
      const handlers = this.runs.get(id)!;
      this.runs.delete(id);
      this.idle();
      return void queueMicrotask(() => handlers.onClose(null, 'SIGTERM'));
    }
    if (this.child.connected) this.child.send({ kill: id });
    // A starter that does not answer (stopped, hung) would leave the run open for ever. But a git whose
    // pipes a child of its own holds (a hook's, ssh's) closes only when that child ends, long after the
    // git was ended and reaped: the starter is asked whether it is alive before anything is killed.
    setTimeout(() => {
      if (!this.runs.has(id) || this.ended) return;
      const ping = (this.next += 1);
      this.pongs.set(ping, () => this.settleKilled(id));
      if (this.child.connected) this.child.send({ ping });
      setTimeout(() => {
        if (!this.pongs.delete(ping) || !this.runs.has(id) || this.ended) return;
        // Hung: it cannot have reaped its git, so the pid is still that git's.
        const pid = this.pids.get(id);
        if (pid !== undefined) killQuietly(pid, 'SIGTERM');
        this.child.kill('SIGKILL');
        this.gone();
      }, KILL_ANSWER_MS).unref();
    }, KILL_ANSWER_MS).unref();
  }

  /** A killed run whose close does not come (its pipes held): ended for the caller; its late replies are dropped. */
  private settleKilled(id: number): void {
    const handlers = this.runs.get(id);
    if (!handlers) return;
    this.runs.delete(id);
    this.pids.delete(id);
    handlers.onClose(null, 'SIGTERM');
    this.idle();
  }

  private reply(reply: Reply): void {
    if (reply.ready) {
      // Everything sent is read from now on: a run it was sent may have started git.
      this.up = true;
      for (const [id, { request }] of this.waiting) this.send(id, request);
      this.waiting.clear();
      this.markReady();
      return;
    }
    if (reply.pong !== undefined) {
      const answered = this.pongs.get(reply.pong);
      this.pongs.delete(reply.pong);
      return answered?.();
    }
    const handlers = this.runs.get(reply.id);
    if (!handlers) return;
    if (reply.pid !== undefined) this.pids.set(reply.id, reply.pid);
    else if (reply.out) handlers.onStdout(Buffer.from(reply.out.buffer, reply.out.byteOffset, reply.out.byteLength));
    else if (reply.err) handlers.onStderr(Buffer.from(reply.err.buffer, reply.err.byteOffset, reply.err.byteLength));
    else {
      this.runs.delete(reply.id);
      this.pids.delete(reply.id);
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
      for (const [id, { request, handlers, run }] of this.waiting) {
        this.runs.delete(id);
        run.kill = startDirectly(request, handlers).kill;
      }
    }
    this.markReady();
    // It ended under its runs (killed): whether their git ran is unknown, so they fail rather than run twice.
    for (const handlers of this.runs.values()) handlers.onClose(null, null, { message: 'the process that starts git ended' });
    this.runs.clear();
    this.pids.clear();
  }
}

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already ended.
  }
}

function startDirectly(request: GitStartRequest, handlers: GitRunHandlers): GitRun {
  const child = childProcess().spawn('git', request.args, { windowsHide: true, env: request.env, stdio: ['pipe', 'pipe', 'pipe'] });
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
/** The starter parked at the process's start, until the first starter is wanted (gitStarter.adopt). */
let parked: ParkedStarter | undefined;
const takeParked = () => {
  const taken = parked;
  parked = undefined;
  return taken;
};
/** Starters that never got ready, and until when git is started directly (Infinity: for good). */
let failedStarts = 0;
let directUntil = 0;
const startsDirectly = () => Date.now() < directUntil;

function starterGone(started: boolean): void {
  starter = undefined;
  // One that got ready clears the count: slow starts spread over a long life do not add up to "for good".
  if (started) return void (failedStarts = 0);
  // Bounded: a machine where it cannot run does not pay a Node start at every try.
  failedStarts += 1;
  directUntil = failedStarts >= STARTER_TRIES ? Infinity : Date.now() + STARTER_RETRY_MS * failedStarts;
}

/**
 * Starts git (run-git.ts's one way to). `start` is replaceable so that tests can count the gits a
 * service starts. The starter is started by `prepare` (the service, once listening) or at the first
 * run, and again after it ended; it ends with the service's process.
 */
export const gitStarter = {
  start(request: GitStartRequest, handlers: GitRunHandlers): GitRun {
    if (startsDirectly()) return startDirectly(request, handlers);
    starter ??= Starter.start(starterGone, takeParked());
    return starter.run(request, handlers);
  },

  /**
   * The starter parked by the command line's entry (cli-loader.ts, `parkStarter`): the first starter is
   * that process, let go, rather than a fork of the service as it is by then (100+ MB).
   */
  adopt(starter: ParkedStarter): void {
    parked = starter;
  },

  /**
   * Starts the starter ahead of the first git: its own start (a Node process's, 0.3-1.3 s on a loaded
   * machine) then runs beside the store's open and the warm-up, not in front of the warm-up's git
   * status, which a chat sent one second after start waited for (issue 25). Keeps nothing alive.
   */
  prepare(): void {
    if (!startsDirectly()) starter ??= Starter.start(starterGone, takeParked());
  },
};

/** The starter's process id while it runs (tests: a starter that ended is replaced). */
export function gitStarterPid(): number | undefined {
  return startsDirectly() ? undefined : starter?.pid;
}
