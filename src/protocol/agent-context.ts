import * as z from 'zod';
import { command, nonEmpty } from './command-frame';
import { lazySchema } from './lazy-schema';

export * from './saved-prompt-text';

/**
 * What the agent is given besides the conversation (docs/protocol.md, "The agent's context"): the
 * tools it may call, the instruction files in force, and the saved prompts a client offers as shortcuts.
 */

/** How service.json's `system_prompt` joins the built-in one: after it (`add`), or in its place (`replace`). */
export const SystemPromptMode = lazySchema(() => z.enum(['add', 'replace']));
export type SystemPromptMode = z.infer<typeof SystemPromptMode>;

/** An instruction file the model is given (its text is not sent: the file is the user's to open). */
export const InstructionFileInfo = lazySchema(() =>
  z.object({
    /** `user`: `<data dir>/AGENTS.md`, for every project; `project`: a file of a workspace folder. */
    scope: z.enum(['user', 'project']),
    /** Relative to its workspace folder, `/` separators (prefixed with the folder's name when several are open). */
    path: z.string(),
    /** Its size on disk. */
    bytes: z.number().int(),
    /** Only its beginning reached the model (instruction files are limited to 32 KiB in all). */
    cut: z.boolean(),
  }),
);
export type InstructionFileInfo = z.infer<typeof InstructionFileInfo>;

export const SavedPrompt = lazySchema(() =>
  z.object({
    name: z.string(),
    description: z.string(),
    /** `project`: `.remote-assistant/prompts/` of a workspace folder; `user`: `<data dir>/prompts/`. */
    scope: z.enum(['user', 'project']),
    /** The Markdown body, `$ARGUMENTS` where the argument goes. */
    template: z.string(),
    /** The template holds `$ARGUMENTS`: a client asks for the argument. */
    takes_arguments: z.boolean(),
  }),
);
export type SavedPrompt = z.infer<typeof SavedPrompt>;

export const ToolInfo = lazySchema(() =>
  z.object({
    name: z.string(),
    description: z.string(),
    parameters: z.record(z.string(), z.string()),
    /** `vscode`: another VS Code extension's tool (vscode.lm.tools), offered when the service runs in the editor. */
    from: z.literal('vscode').optional(),
  }),
);
export type ToolInfo = z.infer<typeof ToolInfo>;

export const ListToolsCommand = lazySchema(() => command('list_tools', {}));

/** The instruction files the model is given; with a conversation, also those above the paths its tools touched. */
export const ListInstructionsCommand = lazySchema(() => command('list_instructions', { conversation_id: nonEmpty('conversation_id').optional() }));

/** The saved prompts of the workspace and the user (docs/protocol.md, "Saved prompts"); with a conversation of its own worktree, the worktree's project prompts. */
export const ListPromptsCommand = lazySchema(() => command('list_prompts', { conversation_id: nonEmpty('conversation_id').optional() }));

export const AgentContextResults = lazySchema(() => ({
  list_tools: z.object({ tools: z.array(ToolInfo) }),
  /** With a conversation, `fingerprint`: the files in force with their words, as turn.ended's `instructions` says them. */
  list_instructions: z.object({ files: z.array(InstructionFileInfo), fingerprint: z.string().optional() }),
  list_prompts: z.object({ prompts: z.array(SavedPrompt) }),
}));
