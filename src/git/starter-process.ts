// The git starter's process (git-starter.ts runs git through it): its program, and the two ways to start
// it. A module of its own so that the command line's small entry (cli-loader.ts) can park one at the
// process's start without loading the service.
import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { childProcess } from '../platform/builtins';

/**
 * The starter, as plain JavaScript run by `node -e` (no file to find in a bundle, a test or the editor).
 * It says `{ ready }` first. Messages: `{ id, args, env, input, maxBytes }` starts git; `{ kill: id }` ends it. Back: `{ id, pid }`,
 * `{ id, out }`, `{ id, err }` (Buffers, at most maxBytes + 1 bytes of each), then `{ id, code, signal, error }`. The service gone (the channel closed), it exits once its gits
 * have ended: a git the service started finishes as it did when it was the service's own child (a commit
 * under way at a kill -9 completes, as review-kill.test.ts expects).
 */
const STARTER = String.raw`
const { spawn } = require('node:child_process');
const runs = new Map();
const send = (message) => process.connected && process.send(message);
process.on('message', (m) => {
  if (m.kill !== undefined) return void runs.get(m.kill)?.kill('SIGTERM');
  if (m.ping !== undefined) return void send({ id: 0, pong: m.ping });
  let child;
  try {
    child = spawn('git', m.args, { env: m.env, windowsHide: true, stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) {
    return void send({ id: m.id, code: null, signal: null, error: { code: e.code, message: e.message } });
  }
  runs.set(m.id, child);
  if (child.pid !== undefined) send({ id: m.id, pid: child.pid });
  let error;
  child.on('error', (e) => (error = { code: e.code, message: e.message }));
  const left = { out: (m.maxBytes ?? Infinity) + 1, err: (m.maxBytes ?? Infinity) + 1 };
  const relay = (key) => (chunk) => {
    if (left[key] <= 0) return;
    if (chunk.length >= left[key]) chunk = chunk.subarray(0, left[key]);
    left[key] -= chunk.length;
    send({ id: m.id, [key]: chunk });
    if (left[key] <= 0) child.kill('SIGTERM');
  };
  child.stdout.on('data', relay('out'));
  child.stderr.on('data', relay('err'));
  child.stdin.on('error', () => undefined);
  child.stdin.end(m.input);
  child.on('close', (code, signal) => (runs.delete(m.id), send({ id: m.id, code, signal, error })));
});
process.send({ ready: true });
`;

/** Its own environment: no NODE_OPTIONS (a test's loader or an --inspect port is not for it), and an editor's Electron binary runs as plain Node. Each git gets the environment its run names. */
function starterEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ELECTRON_RUN_AS_NODE: '1' };
  delete env.NODE_OPTIONS;
  return env;
}

const STARTER_OPTIONS = { serialization: 'advanced', windowsHide: true } as const;

/** A starter started now: a fork of this process as it is, then Node's start. */
export function spawnStarter(): ChildProcess {
  return childProcess().spawn(process.execPath, ['-e', STARTER], { ...STARTER_OPTIONS, env: starterEnv(), stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
}

/** A starter's process that waits to become one: `release` lets it go (at most once; undefined when it is gone). */
export interface ParkedStarter {
  /** The process: the shell's until released, then the starter's (exec keeps it). */
  readonly pid: number | undefined;
  release(): ChildProcess | undefined;
}

/**
 * A shell that waits for a line on its standard input, then becomes the starter (`exec` of Node, the
 * same process and IPC channel). Starting a process forks the one that starts it, and the fork's cost
 * (the page tables copied, the caller's thread held until the child execs) grows with its size: parked
 * by the command line's entry, the fork is of a 40 MB process before the service loads, not of the
 * 100+ MB service at listening (docs/design.md, "Start-up to ready, again (s14, ready14)"), and Node's
 * own start still waits for the service to listen (released by the warm-up's first step, where
 * spawnStarter ran before). The shell keeps nothing alive; when this process ends unreleased, its end
 * of the pipe closes, `read` fails and the shell exits. None on Windows (no /bin/sh): undefined there,
 * and when the shell cannot be started.
 */
export function parkStarter(): ParkedStarter | undefined {
  if (process.platform === 'win32') return undefined;
  let child: ChildProcess;
  try {
    child = childProcess().spawn('/bin/sh', ['-c', 'read -r _ || exit 0; exec "$0" -e "$1"', process.execPath, STARTER], {
      ...STARTER_OPTIONS,
      env: starterEnv(),
      stdio: ['pipe', 'ignore', 'ignore', 'ipc'],
    });
  } catch {
    return undefined;
  }
  let gone = false;
  child.once('error', () => (gone = true));
  child.once('exit', () => (gone = true));
  // A spawn refused at once (EMFILE, ENFILE) returns a process without its pipes, and says so by 'error'.
  if (child.pid === undefined || !child.stdin) return undefined;
  child.unref();
  child.channel?.unref();
  const stdin = child.stdin as Socket;
  stdin.on('error', () => undefined);
  stdin.unref();
  let released = false;
  return {
    pid: child.pid,
    release: () => {
      if (released || gone || child.pid === undefined) return undefined;
      released = true;
      stdin.end('\n');
      return child;
    },
  };
}
