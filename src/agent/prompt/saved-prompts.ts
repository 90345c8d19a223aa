import { constants } from 'node:fs';
import { open, readdir, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { displayName, PROMPT_ARGUMENTS, SAVED_PROMPT_NAME, type SavedPrompt } from '../../protocol';
import { openForReading } from '../tools/anchored-fs';
import { decodeText } from '../tools/text-files';
import { resolveWorkspacePath } from '../tools/workspace';

/** A workspace's saved prompts: `<root>/.remote-assistant/prompts/*.md`. */
export const PROJECT_PROMPTS_FOLDER = '.remote-assistant/prompts';
/** The user's, for every project: `<data dir>/prompts/*.md`. */
export const USER_PROMPTS_FOLDER = 'prompts';
/** A prompt file larger than this is skipped (a prompt is a paragraph or two, not a document). */
const MAX_PROMPT_BYTES = 16 * 1024;
/** Prompts listed at most (per folder): a phone shows them as buttons. */
const MAX_PROMPTS = 100;

/**
 * The saved prompts (docs/protocol.md, "Saved prompts"): Markdown files with optional front matter
 * (`name`, `description`), their body a message with `$ARGUMENTS` where the argument goes. The
 * workspace's come first; a user's prompt of the same name is shadowed by the project's. Workspace
 * files are read through the file tools' confinement (a link leading out is not followed).
 */
export async function listSavedPrompts(roots: readonly string[], dataDir: string | undefined): Promise<SavedPrompt[]> {
  const prompts = new Map<string, SavedPrompt>();
  const add = (found: SavedPrompt[]) => {
    for (const prompt of found) if (!prompts.has(prompt.name)) prompts.set(prompt.name, prompt);
  };
  for (const root of roots) add(await projectPrompts([...roots], path.resolve(root)));
  if (dataDir) add(await userPrompts(path.join(dataDir, USER_PROMPTS_FOLDER)));
  return [...prompts.values()];
}

/** The workspace's prompts, each opened through the file tools' confinement. */
function projectPrompts(roots: string[], root: string): Promise<SavedPrompt[]> {
  const folder = path.join(root, PROJECT_PROMPTS_FOLDER);
  return promptsIn(folder, 'project', async (name) => openForReading(await resolveWorkspacePath(roots, path.join(folder, name)), name));
}

/** The user's prompts in the data directory: regular files, a symbolic link not followed. */
function userPrompts(folder: string): Promise<SavedPrompt[]> {
  return promptsIn(folder, 'user', (name) => open(path.join(folder, name), constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0)));
}

async function promptsIn(folder: string, scope: SavedPrompt['scope'], openFile: (name: string) => Promise<FileHandle>): Promise<SavedPrompt[]> {
  const found: SavedPrompt[] = [];
  for (const name of await markdownFiles(folder)) {
    let handle: FileHandle | undefined;
    try {
      handle = await openFile(name);
      const prompt = await promptOf(handle, name, scope);
      if (prompt) found.push(prompt);
    } catch {
      // A link leading out, a file gone meanwhile, unreadable: not a prompt.
    } finally {
      await handle?.close();
    }
  }
  return found;
}

/** The `.md` files of a folder, sorted by name (none when it does not exist). */
async function markdownFiles(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile() && entry.name.toLowerCase().endsWith('.md'))
    .map((entry) => entry.name)
    .sort()
    .slice(0, MAX_PROMPTS);
}

async function promptOf(handle: FileHandle, fileName: string, scope: SavedPrompt['scope']): Promise<SavedPrompt | undefined> {
  const info = await handle.stat();
  if (!info.isFile() || info.size > MAX_PROMPT_BYTES) return undefined;
  const text = decodeText(await handle.readFile());
  if (text === undefined) return undefined;
  return parsePrompt(text, fileName, scope);
}

/** A prompt file's front matter and body; undefined when its name is not one `/name` can type, or it is empty. */
export function parsePrompt(text: string, fileName: string, scope: SavedPrompt['scope']): SavedPrompt | undefined {
  const { fields, body } = frontMatterOf(text.replace(/^\uFEFF/, ''));
  const name = fields.name ?? fileName.replace(/\.md$/i, '');
  const template = body.trim();
  if (!SAVED_PROMPT_NAME.test(name) || template.length === 0) return undefined;
  // The description is shown as a button's label or title: no bidi or control characters (protocol/display-name.ts).
  return { name, description: displayName(fields.description ?? ''), scope, template, takes_arguments: template.includes(PROMPT_ARGUMENTS) };
}

/** `---` lines around `key: value` lines at the top (the common subset of YAML front matter; quotes around a value are dropped). */
function frontMatterOf(text: string): { fields: Record<string, string>; body: string } {
  const match = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text);
  if (!match) return { fields: {}, body: text };
  const fields: Record<string, string> = {};
  for (const line of match[1].split(/\r?\n/)) {
    // No `\s*` beside `.*` (the value is trimmed anyway): on a long run of blanks followed by what `.` does
    // not match (a lone `\r`) the two shared the run every way, quadratically (a repository's file).
    const field = /^([A-Za-z_][\w-]*)[ \t]*:(.*)$/.exec(line);
    if (field) fields[field[1].toLowerCase()] = field[2].trim().replace(/^(["'])(.*)\1$/, '$2');
  }
  return { fields, body: text.slice(match[0].length) };
}
