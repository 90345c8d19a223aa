import { openForReading } from '../anchored-fs';
import { recordedWrite } from '../recorded-write';
import { defineTool } from '../define-tool';
import { formatBytes, looksBinary } from '../text-files';
import { ToolError, type Tool } from '../types';
import { diffPreview, wireDiff } from '../preview';
import { resolveWritablePath, workspaceSubject, type WorkspacePath, type WorkspaceRoots } from '../workspace';

export const EDIT_MAX_BYTES = 10 * 1024 * 1024;

/** Non-overlapping occurrences of `needle`, and where the first is. */
function occurrences(text: string, needle: string): { count: number; first: number } {
  let count = 0;
  const first = text.indexOf(needle);
  for (let at = first; at !== -1; at = text.indexOf(needle, at + needle.length)) count++;
  return { count, first };
}

const toCrlf = (s: string) => s.replace(/\r?\n/g, '\r\n');

interface EditArgs {
  path: string;
  old_string: string;
  new_string: string;
  replace_all?: boolean;
}

/** The file's text, refused unless edit_file can change it safely (a text file, UTF-8, not too big). */
async function readEditableText(target: WorkspacePath, shown: string): Promise<string> {
  // Read through one handle opened inside the workspace, written back the same way (see anchored-fs).
  const file = await openForReading(target, shown);
  let raw: Buffer;
  try {
    const info = await file.stat();
    if (!info.isFile()) throw new ToolError(`${shown} is not a file`);
    if (info.size > EDIT_MAX_BYTES) throw new ToolError(`${shown} is ${formatBytes(info.size)}; edit_file handles files up to ${formatBytes(EDIT_MAX_BYTES)}`);
    raw = await file.readFile();
  } finally {
    await file.close();
  }
  if (looksBinary(raw.subarray(0, 8192))) throw new ToolError(`${shown} is a binary file; edit_file only edits text`);
  try {
    // Written back as UTF-8: a file in another encoding would be silently damaged, so it is refused.
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(raw);
  } catch {
    throw new ToolError(`${shown} is not UTF-8 text; edit_file cannot change it safely`);
  }
}

/** The text after the edit, and how many places it changes; the tool's rules of matching live here alone. */
function applyEdit(text: string, args: EditArgs): { updated: string; count: number } {
  let oldString = args.old_string;
  let newString = args.new_string;
  let found = occurrences(text, oldString);
  // The model writes "\n"; a file with Windows line endings holds "\r\n".
  if (found.count === 0 && text.includes('\r\n') && /(^|[^\r])\n/.test(oldString)) {
    oldString = toCrlf(oldString);
    newString = toCrlf(newString);
    found = occurrences(text, oldString);
  }
  if (found.count === 0) {
    throw new ToolError(`old_string was not found in ${args.path}; it must match the file exactly, whitespace and indentation included (read_file shows the current text). Nothing was changed.`);
  }
  if (found.count > 1 && args.replace_all !== true) {
    throw new ToolError(
      `old_string matches ${found.count} places in ${args.path}; include more surrounding lines to make it unique, or set replace_all to true to replace all ${found.count}. Nothing was changed.`,
    );
  }
  const updated = args.replace_all === true ? text.split(oldString).join(newString) : text.slice(0, found.first) + newString + text.slice(found.first + oldString.length);
  return { updated, count: found.count };
}

/** Everything the edit would do short of writing: run and preview both go through here. */
async function planEdit(roots: WorkspaceRoots, args: EditArgs): Promise<{ target: WorkspacePath; text: string; updated: string; count: number }> {
  if (args.old_string === '') throw new ToolError('old_string is empty; to create a file or replace all of it use write_file');
  if (args.old_string === args.new_string) throw new ToolError('old_string and new_string are the same; there is nothing to change');
  const target = await resolveWritablePath(roots(), args.path);
  const text = await readEditableText(target, args.path);
  return { target, text, ...applyEdit(text, args) };
}

export function editFileTool(roots: WorkspaceRoots): Tool {
  return defineTool({
    name: 'edit_file',
    description:
      'Change part of a text file in the workspace: replace old_string with new_string. old_string must match the ' +
      'file exactly (whitespace and indentation included) and, unless replace_all is true, exactly once: include ' +
      'enough surrounding lines to make it unique. Fails, changing nothing, when old_string is not found or matches ' +
      'more than once (the error says how many times). Use write_file to create a file or replace all of it.',
    params: {
      path: { type: 'string', description: 'File to edit, relative to the workspace folder.' },
      old_string: { type: 'string', description: 'The exact text to replace.' },
      new_string: { type: 'string', description: 'The text to put in its place.' },
      replace_all: { type: 'boolean', optional: true, description: 'Replace every occurrence instead of requiring exactly one (default false).' },
    },
    subject: (args) => workspaceSubject(roots(), typeof args.path === 'string' ? args.path : undefined),
    async preview(args) {
      const { target, text, updated } = await planEdit(roots, args);
      return diffPreview(target, text, updated);
    },
    async run(args, context) {
      const { target, text, updated, count } = await planEdit(roots, args);
      await recordedWrite(context, 'edit_file', target, args.path, updated, false);
      return { content: `Replaced ${count} occurrence${count === 1 ? '' : 's'} in ${target.relative}.`, detail: wireDiff(target, text, updated) };
    },
  });
}
