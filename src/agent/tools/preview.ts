import { firstUnits } from '../../protocol/code-points';
import type { DiffPreview, PermissionPreview } from '../../protocol';
import { unifiedDiff } from './unified-diff';
import { ToolError, type Tool, type ToolPreview } from './types';
import type { WorkspacePath } from './workspace';

/** A diff longer than this is cut (`truncated`): a prompt is read by a person, often on a phone. */
export const MAX_PREVIEW_DIFF_CHARS = 200_000;
const MAX_ARGUMENT_CHARS = 300;

/** Each argument on its own line, long values cut: the preview of a tool that has none of its own. */
export function describeArguments(args: Record<string, unknown>): string {
  const lines = Object.entries(args).map(([name, value]) => {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    return `${name}: ${text.length > MAX_ARGUMENT_CHARS ? `${firstUnits(text, MAX_ARGUMENT_CHARS)}… (${text.length} characters)` : text}`;
  });
  return lines.join('\n') || '(no arguments)';
}

/** The preview of writing `after` over `before` (undefined: the file does not exist yet). */
export function diffPreview(target: WorkspacePath, before: string | undefined, after: string): ToolPreview {
  return { ...wireDiff(target, before, after), file: target.path, proposed: after };
}

/** The diff of writing `after` over `before` as the wire carries it: a prompt's preview, a result's applied change. */
export function wireDiff(target: WorkspacePath, before: string | undefined, after: string): DiffPreview {
  const diff = unifiedDiff(target.relative, before, after);
  const truncated = diff.length > MAX_PREVIEW_DIFF_CHARS;
  return { kind: 'diff', path: target.relative, diff: truncated ? firstUnits(diff, MAX_PREVIEW_DIFF_CHARS) : diff, new_file: before === undefined, truncated };
}

/** A file tool's preview as a result's `detail` (what was applied): the wire's fields only. */
export function appliedDiff(preview: ToolPreview): DiffPreview | undefined {
  const wire = wirePreview(preview);
  return wire.kind === 'diff' ? wire : undefined;
}

/**
 * A call's preview, never throwing: the tool's own, or its arguments; a call that would fail previews
 * as the error the tool would give.
 */
export async function previewToolCall(tool: Tool, args: Record<string, unknown>): Promise<ToolPreview> {
  if (!tool.preview) return { kind: 'arguments', text: describeArguments(args) };
  try {
    return await tool.preview(args);
  } catch (error) {
    const message = error instanceof ToolError ? error.message : `${tool.name} cannot be previewed: ${error instanceof Error ? error.message : String(error)}`;
    return { kind: 'error', message };
  }
}

/** The preview as `permission.request` carries it: without the local path and the proposed text, which only the editor uses. */
export function wirePreview(preview: ToolPreview): PermissionPreview {
  if (preview.kind !== 'diff') return preview;
  const { file: _file, proposed: _proposed, ...wire } = preview;
  return wire;
}
