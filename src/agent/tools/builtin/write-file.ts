import { lstat } from 'node:fs/promises';
import { openForReading } from '../anchored-fs';
import { recordedWrite } from '../recorded-write';
import { defineTool } from '../define-tool';
import { appliedDiff, diffPreview } from '../preview';
import { EDIT_MAX_BYTES } from './edit-file';
import { decodeText, formatBytes } from '../text-files';
import { ToolError, type Tool, type ToolPreview } from '../types';
import { resolveWritablePath, workspaceSubject, type WorkspacePath, type WorkspaceRoots } from '../workspace';

/** A bigger file being overwritten is named, not read and diffed (as edit_file, which refuses bigger ones). */
const PREVIEW_READ_MAX_BYTES = EDIT_MAX_BYTES;

const PARENT_IS_FILE = (shown: string) => `cannot write ${shown}: one of its parent folders is a file`;

/**
 * The diff of writing `content` at `target`, found as writeFileInWorkspace would find the place (a
 * folder there is refused with its words; a symbolic link there is replaced, so it counts as no file).
 * A binary, non-UTF-8 or very large file is named, not diffed.
 */
async function previewWrite(target: WorkspacePath, shown: string, content: string): Promise<ToolPreview> {
  let isFile: boolean;
  let size = 0;
  try {
    const info = await lstat(target.path);
    if (info.isDirectory()) throw new ToolError(`${shown} is a directory; give the path of a file`);
    isFile = info.isFile();
    size = info.size;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // The words of AnchoredDir's walk, which stops at that parent (test/agent/tool-previews.test.ts holds them equal).
    if (code === 'ENOTDIR') throw new ToolError(`cannot reach ${shown}: one of its parent folders is a file`);
    if (code !== 'ENOENT') throw error;
    isFile = false;
  }
  if (!isFile) return diffPreview(target, undefined, content);
  const replaced = (what: string) => ({
    kind: 'diff' as const,
    path: target.relative,
    diff: `--- a/${target.relative}\n+++ b/${target.relative}\n${what} ${target.relative} (${formatBytes(size)}) is replaced by ${formatBytes(Buffer.byteLength(content, 'utf8'))} of text\n`,
    new_file: false,
    truncated: false,
    file: target.path,
    proposed: content,
  });
  if (size > PREVIEW_READ_MAX_BYTES) return replaced('Large file');
  const file = await openForReading(target, shown);
  let raw: Buffer;
  try {
    raw = await file.readFile();
  } finally {
    await file.close();
  }
  const before = decodeText(raw);
  if (before !== undefined) return diffPreview(target, before, content);
  return replaced('Binary file');
}

export function writeFileTool(roots: WorkspaceRoots): Tool {
  return defineTool({
    name: 'write_file',
    description:
      'Create a text file in the workspace, or replace the whole content of an existing one, with content. ' +
      'Missing parent folders are created. The write is atomic: the file never holds half the new text. ' +
      'To change part of an existing file, prefer edit_file.',
    params: {
      path: { type: 'string', description: 'File to write, relative to the workspace folder.' },
      content: { type: 'string', description: 'The complete new content of the file.' },
    },
    subject: (args) => workspaceSubject(roots(), typeof args.path === 'string' ? args.path : undefined),
    async preview(args) {
      return previewWrite(await resolveWritablePath(roots(), args.path), args.path, args.content);
    },
    async run(args, context) {
      const target = await resolveWritablePath(roots(), args.path);
      // What is applied, worked out as the prompt's preview is, before the write: the card shows it (a
      // call the write then refuses throws below, and its preview with it).
      const applied = await previewWrite(target, args.path, args.content).then(appliedDiff, () => undefined);
      let existed: boolean;
      try {
        ({ existed } = await recordedWrite(context, 'write_file', target, args.path, args.content, true));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EEXIST' || code === 'ENOTDIR') throw new ToolError(PARENT_IS_FILE(args.path));
        throw error;
      }
      const size = formatBytes(Buffer.byteLength(args.content, 'utf8'));
      return { content: `${existed ? 'Overwrote' : 'Created'} ${target.relative} (${size}).`, ...(applied ? { detail: applied } : {}) };
    },
  });
}
