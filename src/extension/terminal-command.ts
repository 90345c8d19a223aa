import * as vscode from 'vscode';
import { CappedOutput } from '../agent/tools/capped-output';
import type { ProcessResult } from '../agent/tools/process-runner';
import type { TerminalRunner } from '../agent/tools/terminal-run-command';

const TERMINAL_NAME = 'Remote Assistant';
/** How long a new terminal may take to report shell integration before the command runs hidden instead. */
const SHELL_INTEGRATION_WAIT_MS = 4_000;

// Colours, cursor moves, window titles, and the shell integration's own marks (OSC 633).
const ESCAPES = /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]|\r(?!\n)/g;
/** Terminal output as a program wrote it: escapes removed, the terminal's CRLF back to LF. */
export const stripEscapes = (text: string) => text.replace(/\r\n/g, '\n').replace(ESCAPES, '');

/** The assistant's terminal: reused while its shell is idle in the same folder, else a new one. */
class AssistantTerminal {
  private current: { terminal: vscode.Terminal; cwd: string; busy: boolean } | undefined;

  constructor(private readonly waitMs: number) {}

  /** A terminal in `cwd` with shell integration, marked busy until `release`; undefined when the shell has none. */
  async acquire(cwd: string, signal: AbortSignal): Promise<vscode.Terminal | undefined> {
    const reusable = this.current;
    if (reusable && !reusable.busy && reusable.cwd === cwd && reusable.terminal.exitStatus === undefined && reusable.terminal.shellIntegration) {
      reusable.busy = true;
      reusable.terminal.show(true);
      return reusable.terminal;
    }
    const terminal = vscode.window.createTerminal({ name: TERMINAL_NAME, cwd, isTransient: true });
    terminal.show(true);
    if (!(await shellIntegrationOf(terminal, this.waitMs, signal))) {
      terminal.dispose();
      return undefined;
    }
    if (!this.current || this.current.busy === false || this.current.terminal.exitStatus !== undefined) this.current = { terminal, cwd, busy: true };
    return terminal;
  }

  release(terminal: vscode.Terminal): void {
    if (this.current?.terminal === terminal) this.current.busy = false;
  }
}

function shellIntegrationOf(terminal: vscode.Terminal, waitMs: number, signal: AbortSignal): Promise<boolean> {
  if (terminal.shellIntegration) return Promise.resolve(true);
  return new Promise<boolean>((resolve) => {
    const done = (value: boolean) => {
      clearTimeout(timer);
      subscription.dispose();
      signal.removeEventListener('abort', abort);
      resolve(value);
    };
    const abort = () => done(false);
    const timer = setTimeout(() => done(false), waitMs);
    const subscription = vscode.window.onDidChangeTerminalShellIntegration((e) => e.terminal === terminal && done(true));
    signal.addEventListener('abort', abort, { once: true });
  });
}

/** Runs a shell command line in `terminal` through shell integration: output (escapes removed) and exit code. */
async function execute(terminal: vscode.Terminal, commandLine: string, timeoutMs: number, signal: AbortSignal): Promise<ProcessResult> {
  const integration = terminal.shellIntegration!;
  const output = new CappedOutput();
  let ended: ((code: number | undefined) => void) | undefined;
  const exit = new Promise<number | undefined>((resolve) => (ended = resolve));
  const execution = integration.executeCommand(commandLine);
  const subscription = vscode.window.onDidEndTerminalShellExecution((e) => e.execution === execution && ended?.(e.exitCode));
  // The user closing the terminal ends the shell, and the command with it.
  let closed = false;
  const closing = vscode.window.onDidCloseTerminal((t) => {
    if (t !== terminal) return;
    closed = true;
    ended?.(undefined);
  });
  const reading = (async () => {
    for await (const data of execution.read()) output.push(Buffer.from(stripEscapes(data)));
  })().catch(() => undefined);
  let timedOut = false;
  let cancelled = false;
  const interrupt = () => terminal.sendText('\x03', false);
  const timer = setTimeout(() => {
    timedOut = true;
    interrupt();
    ended?.(undefined);
  }, timeoutMs);
  const onAbort = () => {
    cancelled = true;
    interrupt();
    ended?.(undefined);
  };
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const exitCode = await exit;
    // The stream ends with the command; a little grace for the last chunk when it was interrupted.
    await Promise.race([reading, new Promise((r) => setTimeout(r, 500))]);
    return { exitCode: exitCode ?? null, exitSignal: closed ? 'SIGHUP' : null, timedOut, cancelled, output: output.text(), timeoutMs };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
    subscription.dispose();
    closing.dispose();
  }
}

/**
 * The editor's side of run_command's visible runner (agent/tools/terminal-run-command.ts, on the service's
 * thread): a shell command line runs in a "Remote Assistant" terminal when the shell integration reports
 * its output and exit code there; undefined (the built-in hidden runner then answers) when the shell has
 * no integration or it is turned off.
 */
export function createTerminalRunner(options: { shellIntegrationWaitMs?: number } = {}): TerminalRunner {
  const terminals = new AssistantTerminal(options.shellIntegrationWaitMs ?? SHELL_INTEGRATION_WAIT_MS);
  return async (cwd, commandLine, timeoutMs, signal) => {
    const enabled = vscode.workspace.getConfiguration('terminal.integrated.shellIntegration').get<boolean>('enabled', true);
    if (!enabled) return undefined;
    const terminal = await terminals.acquire(cwd, signal);
    if (!terminal) return undefined;
    try {
      return await execute(terminal, commandLine, timeoutMs, signal);
    } finally {
      terminals.release(terminal);
    }
  };
}
