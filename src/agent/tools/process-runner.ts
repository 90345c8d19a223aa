import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { childProcess } from '../../platform/builtins';
import { CappedOutput, DEFAULT_OUTPUT_CAP_BYTES } from './capped-output';
import { killMarked, newRunMarker, RUN_MARKER_VARIABLE } from './run-marker';
import { ToolError, type ToolOutput } from './types';

export const DEFAULT_COMMAND_TIMEOUT_SECONDS = 60;
/** After the process is killed (or has exited), how long to wait for its pipes to close. */
const PIPE_GRACE_MS = 1000;

const isWindows = process.platform === 'win32';

/** A program with its arguments, run without a shell; or a command line for the platform's shell. */
export type CommandSpec = { argv: string[] } | { shell: string };

export interface ProcessRequest {
  command: CommandSpec;
  cwd: string;
  timeoutMs: number;
  /** Aborting kills the process and everything it started. */
  signal: AbortSignal;
  outputCapBytes?: number;
}

export interface ProcessResult {
  /** Null when the process was killed by a signal. */
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  timedOut: boolean;
  cancelled: boolean;
  /** stdout and stderr, interleaved in the order they arrived, capped. */
  output: string;
  timeoutMs: number;
}

// Process groups still running, killed if the service exits first: a detached group does not get the
// terminal's Ctrl-C, and a command the model started must not outlive the service.
const runningGroups = new Set<number>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const pid of runningGroups) killTree(pid);
  });
}

/**
 * Kills the process and every process it started. On POSIX the child leads its own process group
 * (`detached`), so one kill reaches the shell, its children and theirs. SIGKILL, not SIGTERM: the
 * command owes us no clean shutdown, and a timeout must really end it.
 */
function killTree(pid: number): void {
  if (isWindows) {
    const killer = childProcess().spawn('taskkill', ['/pid', String(pid), '/T', '/F'], { stdio: 'ignore', windowsHide: true });
    killer.on('error', () => undefined);
    return;
  }
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // ESRCH: the whole group is gone already.
  }
}

function spawnCommand(command: CommandSpec, cwd: string, marker: string): ChildProcess {
  const options: SpawnOptions = {
    cwd,
    detached: !isWindows,
    stdio: ['ignore', 'pipe', 'pipe'],
    windowsHide: true,
    env: { ...process.env, [RUN_MARKER_VARIABLE]: marker },
  };
  if ('shell' in command) {
    // On Windows `shell: true` runs `cmd.exe /d /s /c "<line>"`, quoting as cmd expects.
    return isWindows ? childProcess().spawn(command.shell, [], { ...options, shell: true }) : childProcess().spawn('/bin/sh', ['-c', command.shell], options);
  }
  const [file, ...args] = command.argv;
  return childProcess().spawn(file, args, options);
}

/**
 * Runs a command to its end, the time limit, or the abort signal, whichever comes first, collecting its
 * output. Whatever it leaves running (background jobs) is killed once it exits: nothing the model starts
 * outlives the call. Fails (ToolError) only when the program cannot be started at all.
 */
export function runProcess(request: ProcessRequest): Promise<ProcessResult> {
  const { command, cwd, timeoutMs, signal } = request;
  const output = new CappedOutput(request.outputCapBytes ?? DEFAULT_OUTPUT_CAP_BYTES);
  const label = 'shell' in command ? '/bin/sh' : command.argv[0];
  const result: ProcessResult = { exitCode: null, exitSignal: null, timedOut: false, cancelled: false, output: '', timeoutMs };
  if (signal.aborted) return Promise.resolve({ ...result, cancelled: true });
  if ('argv' in command && command.argv.length === 0) return Promise.reject(new ToolError('the command is empty'));

  // What left the process group (setsid) is found by this marker and killed with it (see run-marker).
  const marker = newRunMarker();
  return new Promise<ProcessResult>((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawnCommand(command, cwd, marker);
    } catch (error) {
      reject(new ToolError(`could not start ${label}: ${error instanceof Error ? error.message : String(error)}`));
      return;
    }
    installExitHook();
    const pid = child.pid;
    if (pid !== undefined) runningGroups.add(pid);

    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timeoutTimer);
      clearTimeout(graceTimer);
      signal.removeEventListener('abort', onAbort);
      if (pid !== undefined) runningGroups.delete(pid);
      // Resolved once the stragglers are dead: when the call returns, nothing it started runs on.
      void killMarked(marker)
        .catch(() => 0)
        .then(() => resolve({ ...result, output: output.text() }));
    };
    // A grandchild that left the group (setsid) may still hold the pipes: stop waiting for it.
    const finishSoon = () => {
      if (graceTimer || settled) return;
      graceTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish();
      }, PIPE_GRACE_MS);
    };
    const stop = () => {
      if (pid !== undefined) killTree(pid);
      void killMarked(marker).catch(() => 0);
      finishSoon();
    };
    const onAbort = () => {
      if (settled) return;
      result.cancelled = true;
      stop();
    };
    const timeoutTimer = setTimeout(() => {
      result.timedOut = true;
      stop();
    }, timeoutMs);
    signal.addEventListener('abort', onAbort, { once: true });

    child.stdout?.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => output.push(chunk));
    child.on('error', (error) => {
      if (settled) return;
      if (pid === undefined) {
        settled = true;
        clearTimeout(timeoutTimer);
        signal.removeEventListener('abort', onAbort);
        const code = (error as NodeJS.ErrnoException).code;
        reject(new ToolError(code === 'ENOENT' ? `could not start ${label}: no such program (or the directory ${cwd} is missing)` : `could not start ${label}: ${error.message}`));
      }
    });
    child.on('exit', (code, exitSignal) => {
      result.exitCode = code;
      result.exitSignal = exitSignal;
      if (pid !== undefined && !isWindows) killTree(pid);
      // Those that left the group may hold the pipes open: killing them lets 'close' come now.
      void killMarked(marker).catch(() => 0);
      finishSoon();
    });
    child.on('close', finish);
  });
}

/** What the model reads of a finished command: its output, then how it ended. */
export function describeProcessResult(result: ProcessResult): ToolOutput {
  const text = result.output.length > 0 ? result.output.replace(/\n$/, '') : '(no output)';
  let status: string;
  if (result.timedOut) {
    status = `[timed out after ${result.timeoutMs / 1000} s: the command and every process it started were killed]`;
  } else if (result.cancelled) {
    status = '[cancelled: the command and every process it started were killed]';
  } else if (result.exitSignal) {
    status = `[killed by signal ${result.exitSignal}]`;
  } else {
    status = `[exit code ${result.exitCode}]`;
  }
  return {
    content: `${text}\n${status}`,
    isError: result.timedOut || result.cancelled || result.exitCode !== 0,
    detail: { kind: 'command', exit_code: result.exitCode ?? null, ...(result.exitSignal ? { signal: result.exitSignal } : {}), timed_out: result.timedOut },
  };
}

/** A timeout given in seconds by the model or the config, checked and turned into milliseconds. */
export function timeoutMsOf(seconds: number | undefined, name = 'timeout_seconds'): number {
  if (seconds === undefined) return DEFAULT_COMMAND_TIMEOUT_SECONDS * 1000;
  if (!(seconds > 0) || seconds > 86_400) throw new ToolError(`${name} must be between 0 and 86400 seconds, got ${seconds}`);
  return Math.round(seconds * 1000);
}
