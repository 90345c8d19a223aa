import { firstUnits } from '../../protocol/code-points';
import { ToolError } from './types';

/** The argument types a tool may declare. `string | string[]` is run_command's `command`. */
export type ParamType = 'string' | 'integer' | 'number' | 'boolean' | 'string | string[]';

export interface ParamSpec {
  type: ParamType;
  description?: string;
  optional?: boolean;
}

export type ParamSpecs = Record<string, ParamSpec>;

interface TypeOfParam {
  string: string;
  integer: number;
  number: number;
  boolean: boolean;
  'string | string[]': string | string[];
}

/** The checked arguments of a tool declared with `S`. */
export type ArgsOf<S extends ParamSpecs> = {
  [K in keyof S]: S[K]['optional'] extends true ? TypeOfParam[S[K]['type']] | undefined : TypeOfParam[S[K]['type']];
};

function jsonSchemaOfType(type: ParamType): Record<string, unknown> {
  if (type === 'string | string[]') {
    return { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, minItems: 1 }] };
  }
  return { type };
}

/** The JSON Schema of the arguments, as the model is shown it. */
export function inputSchemaOf(specs: ParamSpecs): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  for (const [name, spec] of Object.entries(specs)) {
    properties[name] = { ...jsonSchemaOfType(spec.type), ...(spec.description ? { description: spec.description } : {}) };
    if (!spec.optional) required.push(name);
  }
  return { type: 'object', properties, required, additionalProperties: false };
}

/** Parameter name → type name, for `list_tools`. */
export function parameterTypesOf(specs: ParamSpecs): Record<string, string> {
  return Object.fromEntries(Object.entries(specs).map(([name, spec]) => [name, spec.type]));
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `a string (${JSON.stringify(value.length > 40 ? `${firstUnits(value, 40)}...` : value)})`;
  return `a ${typeof value}`;
}

function matchesType(type: ParamType, value: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'string | string[]':
      return typeof value === 'string' || (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string'));
  }
}

/**
 * Checks the model's arguments against the declaration: every required one present, each of its type,
 * nothing unknown (a misspelt optional argument would otherwise be silently ignored). `null` counts as
 * absent, since models send it for optional arguments they do not use.
 */
export function checkArgs<S extends ParamSpecs>(specs: S, args: Record<string, unknown>, toolName: string): ArgsOf<S> {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    throw new ToolError(`${toolName}: the arguments must be a JSON object`);
  }
  const unknown = Object.keys(args).filter((name) => !Object.hasOwn(specs, name));
  if (unknown.length > 0) {
    const expected = Object.keys(specs).join(', ') || 'none';
    throw new ToolError(`${toolName}: unknown argument${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (expected: ${expected})`);
  }
  const checked: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const value = args[name];
    if (value === undefined || value === null) {
      if (!spec.optional) throw new ToolError(`${toolName}: missing required argument ${name} (${spec.type})`);
      continue;
    }
    if (!matchesType(spec.type, value)) {
      throw new ToolError(`${toolName}: argument ${name} must be ${spec.type === 'integer' ? 'an integer' : `a ${spec.type}`}, got ${describeValue(value)}`);
    }
    checked[name] = value;
  }
  return checked as ArgsOf<S>;
}
