import { writeFileInWorkspace } from './anchored-fs';
import type { ToolContext } from './types';
import type { WorkspacePath } from './workspace';

/**
 * A file tool's write: through the turn's recorder when there is one (its before-image is kept for
 * undo_turn, agent/turn-files.ts), else straight to the file.
 */
export function recordedWrite(context: ToolContext, tool: string, target: WorkspacePath, shown: string, content: string, createParents: boolean): Promise<{ existed: boolean }> {
  return context.files ? context.files.write(tool, target, shown, content, createParents) : writeFileInWorkspace(target, shown, content, createParents);
}
