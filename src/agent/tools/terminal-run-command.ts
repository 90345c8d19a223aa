import { statOrExplain } from './builtin/fs-errors';
import { describeProcessResult, timeoutMsOf, type ProcessResult } from './process-runner';
import { ToolError, type Tool, type ToolContext, type ToolOutput } from './types';
import { resolveWorkspacePath, type WorkspaceRoots } from './workspace';

/**
 * Runs a shell command line in the editor's terminal, where the person can watch it: its output and
 * exit status, or undefined when the terminal cannot report them (no shell integration, turned off), so
 * the built-in hidden runner answers instead. Aborting the signal interrupts the command (Ctrl-C).
 */
export type TerminalRunner = (cwd: string, commandLine: string, timeoutMs: number, signal: AbortSignal) => Promise<ProcessResult | undefined>;

/**
 * The built-in run_command, shown to the user: a shell command line runs in the editor's visible
 * terminal (`runner`, the host's). An argv command, or a terminal that cannot report: the built-in,
 * hidden runner. Its subject, preview and permissions are the built-in's: only where it runs differs.
 */
export function terminalRunCommand(builtin: Tool, roots: WorkspaceRoots, runner: TerminalRunner): Tool {
  return {
    ...builtin,
    description: `${builtin.description} In the editor, a command line runs in a visible terminal the user can watch.`,
    async run(args: Record<string, unknown>, context: ToolContext): Promise<ToolOutput> {
      if (typeof args.command !== 'string' || args.command.trim() === '') return builtin.run(args, context);
      const timeoutMs = timeoutMsOf(args.timeout_seconds as number | undefined);
      const shown = typeof args.cwd === 'string' ? args.cwd : '.';
      const cwd = await resolveWorkspacePath(roots(), shown);
      if (!(await statOrExplain(cwd.path, shown)).isDirectory()) throw new ToolError(`cwd ${shown} is not a folder`);
      const result = await runner(cwd.path, args.command, timeoutMs, context.signal);
      return result ? describeProcessResult(result) : builtin.run(args, context);
    },
  };
}
