import { writeFileInWorkspace } from '../anchored-fs';
import { defineTool } from '../define-tool';
import { formatBytes } from '../text-files';
import { ToolError, type Tool } from '../types';
import { resolveWorkspacePath, workspaceSubject, type WorkspaceRoots } from '../workspace';

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
    async run(args) {
      const target = await resolveWorkspacePath(roots(), args.path);
      let existed: boolean;
      try {
        ({ existed } = await writeFileInWorkspace(target, args.path, args.content, true));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'EEXIST' || code === 'ENOTDIR') throw new ToolError(`cannot write ${args.path}: one of its parent folders is a file`);
        throw error;
      }
      const size = formatBytes(Buffer.byteLength(args.content, 'utf8'));
      return { content: `${existed ? 'Overwrote' : 'Created'} ${target.relative} (${size}).` };
    },
  });
}
