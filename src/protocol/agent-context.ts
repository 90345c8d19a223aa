import { z } from 'zod';

/**
 * What the agent is given besides the conversation (docs/protocol.md, "The agent's context"): the
 * instruction files in force, and the saved prompts a client offers as shortcuts. No imports but zod:
 * the web page bundles it.
 */

/** How service.json's `system_prompt` joins the built-in one: after it (`add`), or in its place (`replace`). */
export const SystemPromptMode = z.enum(['add', 'replace']);
export type SystemPromptMode = z.infer<typeof SystemPromptMode>;

/** An instruction file the model is given (its text is not sent: the file is the user's to open). */
export const InstructionFileInfo = z.object({
  /** `user`: `<data dir>/AGENTS.md`, for every project; `project`: a file of a workspace folder. */
  scope: z.enum(['user', 'project']),
  /** Relative to its workspace folder, `/` separators (prefixed with the folder's name when several are open). */
  path: z.string(),
  /** Its size on disk. */
  bytes: z.number().int(),
  /** Only its beginning reached the model (instruction files are limited to 32 KiB in all). */
  cut: z.boolean(),
});
export type InstructionFileInfo = z.infer<typeof InstructionFileInfo>;

/** A saved prompt's name: what `/name` types in the editor's chat. */
export const SAVED_PROMPT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** Where the prompt's argument goes; a prompt without it gets the argument after its text. */
export const PROMPT_ARGUMENTS = '$ARGUMENTS';

export const SavedPrompt = z.object({
  name: z.string(),
  description: z.string(),
  /** `project`: `.remote-assistant/prompts/` of a workspace folder; `user`: `<data dir>/prompts/`. */
  scope: z.enum(['user', 'project']),
  /** The Markdown body, `$ARGUMENTS` where the argument goes. */
  template: z.string(),
  /** The template holds `$ARGUMENTS`: a client asks for the argument. */
  takes_arguments: z.boolean(),
});
export type SavedPrompt = z.infer<typeof SavedPrompt>;

/**
 * The message a saved prompt sends: its template with every `$ARGUMENTS` replaced by `args`; a template
 * without the placeholder gets a non-empty argument after it, on a line of its own.
 */
export function expandPrompt(template: string, args: string): string {
  const given = args.trim();
  if (template.includes(PROMPT_ARGUMENTS)) return template.split(PROMPT_ARGUMENTS).join(given);
  return given ? `${template}\n\n${given}` : template;
}

/** `/name rest` typed in a chat: the prompt's name and its argument, or undefined when the text is not one. */
export function slashCommandOf(text: string): { name: string; args: string } | undefined {
  const match = /^\/([A-Za-z0-9][A-Za-z0-9_-]{0,63})(?:\s+([\s\S]*))?$/.exec(text.trim());
  return match ? { name: match[1], args: match[2] ?? '' } : undefined;
}
