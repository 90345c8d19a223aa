/**
 * How a saved prompt becomes a message (docs/protocol.md, "Saved prompts"). No imports: the web page
 * bundles it (the rest of src/protocol reaches the page as types only).
 */

/** A saved prompt's name: what `/name` types in the editor's chat. */
export const SAVED_PROMPT_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** Where the prompt's argument goes; a prompt without it gets the argument after its text. */
export const PROMPT_ARGUMENTS = '$ARGUMENTS';

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
