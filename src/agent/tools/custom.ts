import { homedir } from 'node:os';
import type * as z from 'zod';
import type { CustomTool } from '../../protocol/config';
import path from 'node:path';
import { quoteArg } from './command-line';
import { defineTool } from './define-tool';
import { checkArgs, type ParamSpecs } from './params';
import { describeProcessResult, runProcess, timeoutMsOf } from './process-runner';
import { ToolError, type Tool, type ToolSource } from './types';
import type { WorkspaceRoots } from './workspace';

export type CustomToolConfig = z.infer<typeof CustomTool>;

export interface CustomToolOptions {
  workspaceRoots: WorkspaceRoots;
}

/**
 * `{name}` is a placeholder; `{{name}}` writes a literal `{name}`; `${name}` is left alone (a script's
 * own variable in `["sh", "-c", "...", ...]`). Braces around anything but a name (`{print $1}`) are text.
 */
const PLACEHOLDER = /\{\{([A-Za-z_][\w-]*)\}\}|(?<!\$)\{([A-Za-z_][\w-]*)\}/g;

function placeholdersOf(command: string[]): string[] {
  const names = new Set<string>();
  for (const item of command) {
    for (const match of item.matchAll(PLACEHOLDER)) if (match[2] !== undefined) names.add(match[2]);
  }
  return [...names];
}

/**
 * The argv with each placeholder replaced by its argument. An argument only ever becomes (part of) one
 * argv item, and no shell reads the result, so `;`, `$(...)`, backticks, quotes and newlines in it are
 * plain characters.
 */
export function expandCommand(command: string[], values: Record<string, string>): string[] {
  return command.map((item) =>
    item.replace(PLACEHOLDER, (_whole, escaped: string | undefined, name: string) => {
      if (escaped !== undefined) return `{${escaped}}`;
      const value = values[name];
      if (value === undefined) throw new ToolError(`no argument for {${name}}`);
      return value;
    }),
  );
}

type CustomParam = CustomToolConfig['parameters'][string];
const typeOf = (param: CustomParam) => (typeof param === 'string' ? param : param.type);
const allowsOptions = (param: CustomParam | undefined) => typeof param === 'object' && param.allow_options;

/**
 * Refuses an argument that would start an argv item with `-`, where the program would read it as an
 * option (`sort {file}` given `-o/etc/x` writes that file), unless the parameter has `allow_options`.
 * Items after a `--` item, and items the template itself starts with text, are operands: left alone.
 */
export function refuseOptionLikeValues(config: Pick<CustomToolConfig, 'name' | 'command' | 'parameters'>, values: Record<string, string>): void {
  const endOfOptions = config.command.indexOf('--', 1);
  config.command.forEach((item, index) => {
    if (endOfOptions !== -1 && index > endOfOptions) return;
    // The value that would open the item: the first non-empty one of the placeholders it starts with.
    for (let rest = item; ;) {
      const match = /^\{([A-Za-z_][\w-]*)\}/.exec(rest);
      if (!match) return;
      const name = match[1];
      const value = values[name] ?? '';
      if (value === '') {
        rest = rest.slice(match[0].length);
        continue;
      }
      if (value.startsWith('-') && !allowsOptions(config.parameters[name])) {
        throw new ToolError(
          `${config.name}: argument ${name} starts with "-", so ${path.basename(config.command[0])} would read it as an option; ` + 'give a value without a leading "-" (for a file, ./-name)',
        );
      }
      return;
    }
  });
}

function customTool(config: CustomToolConfig, roots: WorkspaceRoots): Tool {
  const params: ParamSpecs = Object.fromEntries(Object.entries(config.parameters).map(([name, param]) => [name, { type: typeOf(param) }]));
  const checkedValues = (args: Record<string, unknown>): Record<string, string> => {
    const unknown = placeholdersOf(config.command).filter((name) => !Object.hasOwn(config.parameters, name));
    if (unknown.length > 0) {
      const declared = Object.keys(config.parameters);
      throw new ToolError(
        `custom tool ${config.name} is misconfigured: its command uses ${unknown.map((n) => `{${n}}`).join(', ')}, ` +
          `which ${unknown.length > 1 ? 'are not parameters' : 'is not a parameter'} (parameters: ${declared.join(', ') || 'none'}); fix "tools" in service.json`,
      );
    }
    const checked = checkArgs(params, args, config.name);
    const values = Object.fromEntries(Object.entries(checked).map(([name, value]) => [name, String(value)]));
    refuseOptionLikeValues(config, values);
    return values;
  };
  return defineTool({
    name: config.name,
    // Only the program's name: the fixed arguments may hold a token, and this text goes to the provider.
    description: config.description || `Runs ${path.basename(config.command[0])} (a custom tool of service.json).`,
    params,
    // It runs a program: what that does to files is not recorded, so undo lists its calls.
    unrecordedEffects: true,
    // The arguments, not the command line: the command is the admin's (and may hold a secret that must
    // not reach a prompt); what varies, and what a rule or the user judges, is what the model passes.
    // A tool without parameters has no subject: its calls are all the same (allow_always adds `<tool>`).
    ...(Object.keys(config.parameters).length === 0
      ? {}
      : {
          subject(args: Record<string, unknown>) {
            try {
              return (
                Object.entries(checkedValues(args))
                  .map(([name, value]) => `${name}=${quoteArg(value)}`)
                  .join(' ') || undefined
              );
            } catch {
              return undefined;
            }
          },
        }),
    async run(args, context) {
      const argv = expandCommand(config.command, checkedValues(args));
      const workspace = roots();
      const result = await runProcess({
        command: { argv },
        // Custom tools need no workspace (a weather lookup); without one they run in the home folder.
        cwd: workspace[0] ?? homedir(),
        timeoutMs: timeoutMsOf(config.timeout_seconds, `timeout_seconds of custom tool ${config.name}`),
        signal: context.signal,
      });
      return describeProcessResult(result);
    },
  });
}

/** The `tools` of service.json, read afresh on every list so that edits apply without a restart. */
export function createCustomToolSource(config: () => CustomToolConfig[], options: CustomToolOptions): ToolSource {
  return {
    name: 'custom',
    followsArea: true,
    tools: async (area) => config().map((entry) => customTool(entry, area ? () => [...area.roots] : options.workspaceRoots)),
  };
}
