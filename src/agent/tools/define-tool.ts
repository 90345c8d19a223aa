import { checkArgs, inputSchemaOf, parameterTypesOf, type ArgsOf, type ParamSpecs } from './params';
import type { Tool, ToolContext, ToolOutput, ToolPreview } from './types';

export interface ToolDefinition<S extends ParamSpecs> {
  name: string;
  description: string;
  params: S;
  /** Given the raw arguments: it runs before the permission check, so it must not trust them. */
  subject?(args: Record<string, unknown>): string | undefined;
  /** Its effects on files are not recorded for undo (see Tool.unrecordedEffects). */
  unrecordedEffects?: boolean;
  /** What `run` would do, by the same code and writing nothing (see Tool.preview). */
  preview?(args: ArgsOf<S>): Promise<ToolPreview>;
  run(args: ArgsOf<S>, context: ToolContext): Promise<ToolOutput>;
}

/** A tool from one declaration of its parameters: the schema, `parameters` and the checks agree. */
export function defineTool<S extends ParamSpecs>(definition: ToolDefinition<S>): Tool {
  const { name, description, params } = definition;
  return {
    name,
    description,
    inputSchema: inputSchemaOf(params),
    parameters: parameterTypesOf(params),
    ...(definition.subject ? { subject: definition.subject } : {}),
    ...(definition.unrecordedEffects ? { unrecordedEffects: true } : {}),
    ...(definition.preview ? { preview: async (args: Record<string, unknown>) => definition.preview!(checkArgs(params, args, name)) } : {}),
    run: async (args, context) => definition.run(checkArgs(params, args, name), context),
  };
}
