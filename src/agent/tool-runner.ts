import { unitsCut } from '../protocol/code-points';
import type { ToolResultDetail } from '../protocol';
import type { Logger } from '../log/logger';
import { refusalText } from './permission-texts';
import type { PermissionGate, PermissionOutcome } from './permissions';
import type { ToolCall } from './providers/types';
import { describeArguments, previewToolCall } from './tools/preview';
import type { TurnFiles } from './turn-files';
import { ToolError, type Tool, type ToolContext, type ToolImage, type ToolOutput } from './tools/types';

export const DEFAULT_TOOL_TIMEOUT_MS = 300_000;
const MAX_RESULT_CHARS = 100_000;

export interface ToolCallResult {
  content: string;
  ok: boolean;
  /** The gate refused the call: how (the permission outcome as the broker or the gate settled it). */
  denied?: PermissionOutcome;
  /** An image to show the user with the result. */
  image?: ToolImage;
  /** What the call did, for the person (the tool's ToolOutput.detail). */
  detail?: ToolResultDetail;
  /** What the call acted on (a path, a command line), when the tool names one: for the audit log. */
  subject?: string;
}

/**
 * Runs one tool call the model asked for: permission first, then the tool under a time limit and the
 * chat's cancel signal. Every failure becomes a result the model can read; nothing here throws.
 */
export async function runToolCall(call: ToolCall, tool: Tool | undefined, context: ToolCallContext): Promise<ToolCallResult> {
  if (!tool) return { content: `Unknown tool "${call.name}".`, ok: false };
  if (call.argumentsError !== undefined) {
    return { content: `invalid arguments: ${call.argumentsError}. Call ${call.name} again with its arguments as one JSON object.`, ok: false };
  }
  let subject: string | undefined;
  try {
    subject = tool.subject?.(call.arguments);
  } catch {
    subject = undefined;
  }
  const outcome = await checkAndRun(call, tool, subject, context);
  return subject === undefined ? outcome : { ...outcome, subject };
}

interface ToolCallContext {
  conversationId: string;
  source: string;
  /** Who sent the turn's message, as people read it (Message.from). */
  from?: string;
  ownerAnswersPrompts?: boolean;
  signal: AbortSignal;
  gate: PermissionGate;
  logger: Logger;
  timeoutMs: number;
  files?: TurnFiles;
  onPlan?: ToolContext['onPlan'];
}

async function checkAndRun(call: ToolCall, tool: Tool, subject: string | undefined, context: ToolCallContext): Promise<ToolCallResult> {
  // A tool that changes nothing outside its conversation (todo) is not the gate's business, whatever the source.
  const refused = tool.conversationOnly ? undefined : await checkPermission(call, tool, subject, context);
  return refused ?? runChecked(call, tool, subject, context);
}

/** The refused call's result, or undefined when the call may run. */
async function checkPermission(call: ToolCall, tool: Tool, subject: string | undefined, context: ToolCallContext): Promise<ToolCallResult | undefined> {
  const outcome = await context.gate.check({
    conversationId: context.conversationId,
    source: context.source,
    ...(context.from !== undefined ? { from: context.from } : {}),
    ownerAnswersPrompts: context.ownerAnswersPrompts,
    tool: tool.name,
    arguments: call.arguments,
    subject,
    subjectMissing: tool.subject !== undefined && subject === undefined,
    preview: () => previewToolCall(tool, call.arguments),
    callId: call.id,
    signal: context.signal,
  });
  if (outcome.decision !== 'deny') return undefined;
  context.logger.info('tool.denied', { tool: tool.name, reason: outcome.reason, source: context.source });
  return { content: refusalText(outcome, tool.name), ok: false, denied: outcome };
}

async function runChecked(call: ToolCall, tool: Tool, subject: string | undefined, context: ToolCallContext): Promise<ToolCallResult> {
  if (context.signal.aborted) return { content: 'Cancelled.', ok: false };
  const timeout = AbortSignal.timeout(context.timeoutMs);
  const signal = AbortSignal.any([context.signal, timeout]);
  const started = Date.now();
  try {
    // Listed before it runs, so a call a crash cuts short is listed too.
    if (tool.unrecordedEffects) await context.files?.unrecorded(tool.name, subject ?? describeArguments(call.arguments));
    const output = await raceAbort(
      tool.run(call.arguments, {
        conversationId: context.conversationId,
        signal,
        ...(context.files ? { files: context.files } : {}),
        ...(context.onPlan ? { onPlan: context.onPlan } : {}),
      }),
      signal,
    );
    const { head, leftOut } = unitsCut(output.content, MAX_RESULT_CHARS);
    const content = leftOut === 0 ? output.content : `${head}\n[... ${leftOut} characters cut]`;
    context.logger.info('tool.ran', { tool: tool.name, ok: !output.isError, ms: Date.now() - started });
    return { content, ok: !output.isError, ...(output.image ? { image: output.image } : {}), ...(output.detail ? { detail: output.detail } : {}) };
  } catch (error) {
    const message = timeout.aborted
      ? `Tool ${tool.name} did not finish within ${Math.round(context.timeoutMs / 1000)} s and was stopped.`
      : context.signal.aborted
        ? 'Cancelled.'
        : error instanceof ToolError
          ? error.message
          : `Tool ${tool.name} failed: ${error instanceof Error ? error.message : String(error)}`;
    context.logger.warn('tool.failed', { tool: tool.name, ms: Date.now() - started, error: message });
    return { content: message, ok: false };
  }
}

/** A tool that ignores its signal still cannot hold the chat past the timeout or a cancel. */
function raceAbort(work: Promise<ToolOutput>, signal: AbortSignal): Promise<ToolOutput> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
