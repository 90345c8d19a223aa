import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { defineTool } from '../define-tool';
import { formatBytes, looksBinary, prefixWithin, readHead } from '../text-files';
import { ToolError, type Tool, type ToolOutput } from '../types';
import { imageTypeOf } from '../../attachments/content';
import { openForReading } from '../anchored-fs';
import { resolveWorkspacePath, workspaceSubject, type WorkspaceRoots } from '../workspace';

export const READ_CAP_BYTES = 256 * 1024;
/** Images read_file shows the user (larger ones are refused as binary, as before). */
const MAX_SHOWN_IMAGE_BYTES = 10 * 1024 * 1024;

/**
 * The file's lines, each with its line ending, read as a stream (the file may be large). A line longer
 * than `maxLineChars` is yielded cut to `maxLineChars + 1` characters (so the caller sees it is too
 * long), and the rest of it is skipped, never held: a 400 MB file on one line costs no more memory
 * than a short one.
 */
async function* linesOf(file: FileHandle, signal: AbortSignal, maxLineChars: number): AsyncGenerator<string> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let skipping = false;
  for await (const chunk of file.createReadStream({ start: 0, highWaterMark: 64 * 1024, autoClose: false })) {
    if (signal.aborted) throw new ToolError('cancelled');
    let text = decoder.write(chunk as Buffer);
    if (skipping) {
      const nl = text.indexOf('\n');
      if (nl === -1) continue;
      skipping = false;
      text = text.slice(nl + 1);
    }
    pending += text;
    let start = 0;
    for (let nl = pending.indexOf('\n'); nl !== -1; nl = pending.indexOf('\n', start)) {
      yield pending.slice(start, nl + 1);
      start = nl + 1;
    }
    pending = pending.slice(start);
    if (pending.length > maxLineChars) {
      yield pending.slice(0, maxLineChars + 1);
      pending = '';
      skipping = true;
    }
  }
  if (skipping) return;
  pending += decoder.end();
  if (pending.length > 0) yield pending;
}

export function readFileTool(roots: WorkspaceRoots): Tool {
  return defineTool({
    name: 'read_file',
    description:
      'Read a text file of the workspace and return its content exactly as stored (no line numbers added). ' +
      'path is relative to the workspace folder (or absolute inside it). For a long file, pass offset (first line, 1-based) ' +
      `and limit (number of lines). At most ${formatBytes(READ_CAP_BYTES)} are returned per call; a note at the end says ` +
      'when the text was cut and which offset to read on from. Binary files are refused.',
    params: {
      path: { type: 'string', description: 'File to read, relative to the workspace folder.' },
      offset: { type: 'integer', optional: true, description: 'First line to return, 1-based (default 1).' },
      limit: { type: 'integer', optional: true, description: 'Number of lines to return (default: all, within the size cap).' },
    },
    subject: (args) => workspaceSubject(roots(), typeof args.path === 'string' ? args.path : undefined),
    async run(args, context) {
      const offset = args.offset ?? 1;
      if (offset < 1) throw new ToolError(`offset must be 1 or more, got ${offset}`);
      if (args.limit !== undefined && args.limit < 1) throw new ToolError(`limit must be 1 or more, got ${args.limit}`);
      const target = await resolveWorkspacePath(roots(), args.path);
      // Opened once, inside the workspace (see anchored-fs); every read below goes through this handle.
      const file = await openForReading(target, args.path);
      try {
        return await readOpenFile(file, args, context.signal);
      } finally {
        await file.close();
      }
    },
  });
}

/** read_file's work on the file it opened: checks, then the wanted lines within the cap. */
async function readOpenFile(file: FileHandle, args: { path: string; offset?: number; limit?: number }, signal: AbortSignal): Promise<ToolOutput> {
  const offset = args.offset ?? 1;
  const info = await file.stat();
  if (info.isDirectory()) throw new ToolError(`${args.path} is a directory, not a file; use list_directory to see what it holds`);
  if (!info.isFile()) throw new ToolError(`${args.path} is not a regular file`);
  if (info.size === 0) return { content: '(empty file)' };
  const head = await readHead(file);
  const image = imageTypeOf(head);
  if (image && info.size <= MAX_SHOWN_IMAGE_BYTES) {
    // The user sees it (the phone shows it with the result); the model gets text only, as from every tool.
    const bytes = await file.readFile();
    return {
      content: `[${args.path} is an image (${image}, ${formatBytes(bytes.length)}): it is shown to the user; read_file returns text only]`,
      image: { name: path.basename(args.path), mime: image, bytes },
    };
  }
  if (looksBinary(head)) {
    throw new ToolError(`${args.path} is a binary file (${formatBytes(info.size)}); read_file only reads text`);
  }

  const lastWanted = args.limit === undefined ? Infinity : offset + args.limit - 1;
  let text = '';
  let bytes = 0;
  let lineNo = 0;
  let firstShown = 0;
  let lastShown = 0;
  let cut = false;
  let partialLine = false;
  let more = false;
  for await (const line of linesOf(file, signal, READ_CAP_BYTES)) {
    lineNo++;
    if (lineNo < offset) continue;
    if (lineNo > lastWanted) {
      more = true;
      break;
    }
    const size = Buffer.byteLength(line, 'utf8');
    if (bytes + size > READ_CAP_BYTES) {
      // One line larger than the cap (minified code, a data dump): show its start rather than nothing.
      if (lastShown === 0) {
        text = prefixWithin(line, READ_CAP_BYTES);
        firstShown = lastShown = lineNo;
        partialLine = true;
      }
      cut = true;
      break;
    }
    text += line;
    bytes += size;
    if (firstShown === 0) firstShown = lineNo;
    lastShown = lineNo;
  }

  if (firstShown === 0) {
    return { content: `[${args.path} has ${lineNo} line${lineNo === 1 ? '' : 's'}; offset ${offset} is past the end]` };
  }
  const sep = text.endsWith('\n') ? '' : '\n';
  if (cut) {
    const shown = partialLine ? `the start of line ${lastShown}, which is longer than that,` : `lines ${firstShown}-${lastShown}`;
    return {
      content: `${text}${sep}[truncated at ${formatBytes(READ_CAP_BYTES)}: showing ${shown} of a ${formatBytes(info.size)} file; read on with offset=${lastShown + 1}]`,
    };
  }
  if (more) return { content: `${text}${sep}[showing lines ${firstShown}-${lastShown}; the file goes on: next offset=${lastShown + 1}]` };
  if (offset > 1 || args.limit !== undefined) return { content: `${text}${sep}[showing lines ${firstShown}-${lastShown}, the end of the file]` };
  return { content: text };
}
