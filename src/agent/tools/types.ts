import type { PermissionPreview, Plan, ToolResultDetail } from '../../protocol';
import type { WorkspacePath } from './workspace';

/**
 * What a call would do, for a permission prompt: the wire's preview, and for a diff the file's absolute
 * path and the whole text the write would leave (`file`, `proposed`: for the editor's diff view, never
 * sent on the wire).
 */
export type ToolPreview = Exclude<PermissionPreview, { kind: 'diff' }> | (Extract<PermissionPreview, { kind: 'diff' }> & { file: string; proposed: string });

/**
 * A tool the agent can call. Built-in tools, custom tools from service.json, MCP servers' tools and
 * the editor's tools all take this shape, so the loop, the permission gate and `list_tools` treat
 * them alike.
 */
export interface Tool {
  readonly name: string;
  readonly description: string;
  /** JSON Schema (type: object) of the arguments, as sent to the model. */
  readonly inputSchema: Record<string, unknown>;
  /** Each parameter name mapped to a type name (`string`, `number`...): what `list_tools` shows. */
  readonly parameters: Record<string, string>;
  /** Where the tool comes from when the host offers another program's tools (`vscode`: vscode.lm.tools); shown by list_tools. */
  readonly from?: 'vscode';
  /**
   * The text permission rules match after `<tool>:` (e.g. the command line of run_command, the path of
   * write_file), and that a prompt shows. Undefined: rules match the tool name alone.
   */
  subject?(args: Record<string, unknown>): string | undefined;
  /**
   * What `run` would do with these arguments, worked out the same way and changing nothing (a ToolError
   * thrown is the error `run` would give). Undefined: a prompt shows the arguments.
   */
  preview?(args: Record<string, unknown>): Promise<ToolPreview>;
  /**
   * Its effects on files are not recorded for undo (it runs commands, or is another program's tool):
   * each call is listed as not reversible in its turn (docs/protocol.md, "Undoing a turn").
   */
  readonly unrecordedEffects?: boolean;
  /**
   * It changes nothing outside its own conversation (the `todo` tool's plan): it runs without the
   * permission gate, in every mode and for every source (docs/protocol.md, "The plan").
   */
  readonly conversationOnly?: boolean;
  /** Runs the tool. Throwing is a failed call; the loop turns it into an error result for the model. */
  run(args: Record<string, unknown>, context: ToolContext): Promise<ToolOutput>;
}

export interface ToolContext {
  conversationId: string;
  /** Aborted when the chat is cancelled or the tool's time is up; long work must stop on it. */
  signal: AbortSignal;
  /** Writes files recording their before-images for undo (a chat turn's); without it, files are written directly. */
  files?: FileWriter;
  /** The call wrote the conversation's plan (the todo tool): the turn tells its followers (`plan.updated`). */
  onPlan?(plan: Plan): void;
}

/** How a file tool writes a file (agent/turn-files.ts records the write for undo_turn). */
export interface FileWriter {
  write(tool: string, target: WorkspacePath, shown: string, content: string, createParents: boolean): Promise<{ existed: boolean }>;
}

export interface ToolOutput {
  /** What the model sees. */
  content: string;
  /** The call failed (the model is told so). */
  isError?: boolean;
  /** An image the tool read or made, shown to the user with the result (stored as an attachment of it). */
  image?: ToolImage;
  /** What the call did, for the person (the applied diff, a command's exit code): stored with the result, never sent to the model. */
  detail?: ToolResultDetail;
}

export interface ToolImage {
  name: string;
  /** Told by its bytes (agent/attachments/content.ts imageTypeOf). */
  mime: string;
  bytes: Buffer;
}

/**
 * Where a conversation's tools work when not in the workspace: the folder of its git worktree
 * (agent/worktrees), the tools' only root.
 */
export interface ToolArea {
  roots: string[];
}

/** Where tools come from; the registry asks each source on every list (sources may change live). */
export interface ToolSource {
  readonly name: string;
  /** With `area`, tools confined to its roots (a source without `followsArea` is not asked then). */
  tools(area?: ToolArea): Promise<Tool[]>;
  /**
   * Its tools can be confined to an area (or touch no file at all). Sources that cannot (MCP servers,
   * the editor's tools: processes started in the workspace) offer nothing to a worktree's conversation.
   */
  readonly followsArea?: boolean;
  /**
   * Calls `changed` whenever what `tools` lists may have changed; returns how to stop. A source that has it
   * may be listed once and its list kept until then: the service on the editor's thread keeps the editor's
   * sources' lists so (service-thread/host-calls.ts), each a crossing of the extension host's loop.
   */
  watch?(changed: () => void): () => void;
  close?(): Promise<void>;
}

/** Thrown by a tool for a failure that is the caller's doing (bad path, missing argument). */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolError';
  }
}
