import { formatArgv } from '../command-line';
import { commandWarnings } from '../command-warnings';
import { defineTool } from '../define-tool';
import { DEFAULT_OUTPUT_CAP_BYTES } from '../capped-output';
import { DEFAULT_COMMAND_TIMEOUT_SECONDS, describeProcessResult, runProcess, timeoutMsOf } from '../process-runner';
import { formatBytes } from '../text-files';
import { ToolError, type Tool } from '../types';
import { resolveWorkspacePath, type WorkspacePath, type WorkspaceRoots } from '../workspace';
import { statOrExplain } from './fs-errors';

/** The command line a permission rule matches: the shell line as given, or the argv quoted as a shell would need. */
export function commandSubject(command: unknown): string | undefined {
  if (typeof command === 'string') return command;
  if (Array.isArray(command) && command.length > 0 && command.every((c) => typeof c === 'string')) return formatArgv(command);
  return undefined;
}

/** The checks before a run, shared by run and preview: the time limit, and the folder (inside the workspace). */
async function checkCall(roots: WorkspaceRoots, args: { command: string | string[]; cwd?: string; timeout_seconds?: number }): Promise<{ timeoutMs: number; cwd: WorkspacePath }> {
  if (typeof args.command === 'string' && args.command.trim() === '') throw new ToolError('command is empty');
  const timeoutMs = timeoutMsOf(args.timeout_seconds);
  const shown = args.cwd ?? '.';
  const folder = await resolveWorkspacePath(roots(), shown);
  const info = await statOrExplain(folder.path, shown);
  if (!info.isDirectory()) throw new ToolError(`cwd ${shown} is not a folder`);
  return { timeoutMs, cwd: folder };
}

/** What a string command of run_command runs through (also told to the model in its environment block). */
export const COMMAND_SHELL = process.platform === 'win32' ? 'cmd.exe' : '/bin/sh -c';

export function runCommandTool(roots: WorkspaceRoots): Tool {
  const shell = COMMAND_SHELL;
  return defineTool({
    name: 'run_command',
    description:
      'Run a command in the workspace and return its output (stdout and stderr together, in the order written) and ' +
      `its exit code. A string command runs through the shell (${shell}), so pipes, redirection, && and globs work; ` +
      'an array runs that program with exactly those arguments and no shell (nothing in them is interpreted). ' +
      'The command gets no input (stdin is empty), so it must not wait for a prompt. It runs in cwd (default: the ' +
      `workspace folder) for at most timeout_seconds (default ${DEFAULT_COMMAND_TIMEOUT_SECONDS}); on timeout it is ` +
      'killed with every process it started, and processes it leaves in the background are killed when it exits. ' +
      `Output over ${formatBytes(DEFAULT_OUTPUT_CAP_BYTES)} keeps its beginning and end.`,
    params: {
      command: { type: 'string | string[]', description: 'A shell command line, or [program, ...arguments] to run without a shell.' },
      cwd: { type: 'string', optional: true, description: 'Folder to run in, relative to the workspace folder (default: the workspace folder).' },
      timeout_seconds: { type: 'number', optional: true, description: `Time limit in seconds (default ${DEFAULT_COMMAND_TIMEOUT_SECONDS}).` },
    },
    subject: (args) => commandSubject(args.command),
    // What a command does to files is not recorded: undo lists its calls as not reversible.
    unrecordedEffects: true,
    async preview(args) {
      const { timeoutMs, cwd } = await checkCall(roots, args);
      return {
        kind: 'command',
        command: commandSubject(args.command) ?? '',
        cwd: cwd.relative,
        timeout_seconds: timeoutMs / 1000,
        warnings: commandWarnings(args.command, cwd.path, [...roots(), cwd.root]),
      };
    },
    async run(args, context) {
      const { timeoutMs, cwd } = await checkCall(roots, args);
      const result = await runProcess({
        command: typeof args.command === 'string' ? { shell: args.command } : { argv: args.command },
        cwd: cwd.path,
        timeoutMs,
        signal: context.signal,
      });
      return describeProcessResult(result);
    },
  });
}
