import type { ToolResultDetail } from '../protocol';
import type { MessageRow } from '../store';
import { contextOf, withContext } from './chat-context';
import type { ChatMessage, ToolCall } from './providers/types';
import { storedAttachmentsOf, type StoredAttachment } from './attachments/content';

/**
 * How tool traffic is kept in the `messages` table (role `tool`), so a conversation can be replayed to a model.
 * `text`: what the model wrote before the calls, on the batch's first call in conversations stored before
 * that text became an assistant message of its own (stored just before the calls).
 */
export type ToolCallData = { kind: 'call'; call_id: string; batch: string; arguments: Record<string, unknown>; text?: string };
/** `detail`: what the call did, for people (get_messages shows it; the model is sent `content` only). */
export type ToolResultData = { kind: 'result'; call_id: string; ok: boolean; denied?: boolean; attachments?: StoredAttachment[]; detail?: ToolResultDetail };

const INTERRUPTED = 'The tool call was interrupted before it returned a result.';

/**
 * Rebuilds the model's view of a conversation from stored rows: consecutive tool-call rows of one
 * batch become one assistant message with tool_calls; a call without a stored result (the process
 * died in between) gets an "interrupted" result so the history stays valid for every provider.
 */
export function transcriptOf(rows: readonly MessageRow[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  let open: { batch: string; message: Extract<ChatMessage, { role: 'assistant' }>; unanswered: Map<string, string> } | undefined;
  const closeBatch = () => {
    if (!open) return;
    for (const [callId, name] of open.unanswered) messages.push({ role: 'tool', tool_call_id: callId, name, content: INTERRUPTED });
    open = undefined;
  };
  let previous: MessageRow | undefined;
  for (const row of rows) {
    const data = row.data as ToolCallData | ToolResultData | null;
    const before = previous;
    previous = row;
    if (row.role === 'tool' && data?.kind === 'call') {
      if (open?.batch !== data.batch) {
        closeBatch();
        // The assistant message stored just before the batch is the text the model wrote with these calls.
        const said = before?.role === 'assistant' ? messages.pop() : undefined;
        const message: Extract<ChatMessage, { role: 'assistant' }> = { role: 'assistant', content: said?.content ?? data.text ?? '', tool_calls: [] };
        messages.push(message);
        open = { batch: data.batch, message, unanswered: new Map() };
      }
      const call: ToolCall = { id: data.call_id, name: row.tool_name ?? 'unknown', arguments: data.arguments };
      open!.message.tool_calls!.push(call);
      open!.unanswered.set(call.id, call.name);
      continue;
    }
    if (row.role === 'tool' && data?.kind === 'result') {
      if (!open?.unanswered.delete(data.call_id)) continue;
      messages.push({ role: 'tool', tool_call_id: data.call_id, name: row.tool_name ?? 'unknown', content: row.content });
      continue;
    }
    closeBatch();
    if (row.role === 'assistant') messages.push({ role: 'assistant', content: row.content });
    if (row.role === 'user') {
      const content = withContext(row.content, contextOf(row.data));
      const attachments = storedAttachmentsOf(row.data);
      messages.push(attachments.length > 0 ? { role: 'user', content, attachments } : { role: 'user', content });
    }
  }
  closeBatch();
  return messages;
}

/**
 * transcriptOf, each turn's part kept: the rows from one user message to the next give the same
 * messages whatever comes before or after them (a user message closes any open batch), so a part whose
 * rows are the same objects as last time (the history cache keeps them) is not rebuilt. Each step of a
 * long conversation rebuilt hundreds of messages, and each user message's attached context, for one new
 * row. The messages are shared between calls: nobody may change them (they are copied where changed).
 */
export class Transcripts {
  /** By a part's first row: its rows (compared one by one) and their messages. */
  private readonly parts = new WeakMap<MessageRow, { rows: readonly MessageRow[]; messages: readonly ChatMessage[] }>();
  /** The parts of the call under way, in order (kept from call to call: no array grown each step). */
  private readonly found: (readonly ChatMessage[] | undefined)[] = [];

  /**
   * transcriptOf(rows), after `lead` (the system messages: the request's messages in one array, made at
   * its length, instead of an array grown message by message and then copied behind the system's).
   */
  of(rows: readonly MessageRow[], lead: readonly ChatMessage[] = []): ChatMessage[] {
    let parts = 0;
    let count = lead.length;
    let start = 0;
    for (let end = 1; end <= rows.length; end += 1) {
      if (end < rows.length && rows[end].role !== 'user') continue;
      const first = rows[start];
      const kept = this.parts.get(first);
      let messages = kept && sameRows(kept.rows, rows, start, end) ? kept.messages : undefined;
      if (!messages) {
        const part = rows.slice(start, end);
        messages = transcriptOf(part);
        this.parts.set(first, { rows: part, messages });
      }
      this.found[parts++] = messages;
      count += messages.length;
      start = end;
    }
    const out = new Array<ChatMessage>(count);
    let at = 0;
    for (const message of lead) out[at++] = message;
    for (let i = 0; i < parts; i += 1) {
      for (const message of this.found[i]!) out[at++] = message;
      this.found[i] = undefined;
    }
    return out;
  }
}

/** Whether `kept` are the very rows `rows[start..end)`. */
function sameRows(kept: readonly MessageRow[], rows: readonly MessageRow[], start: number, end: number): boolean {
  if (kept.length !== end - start) return false;
  for (let i = 0; i < kept.length; i += 1) if (kept[i] !== rows[start + i]) return false;
  return true;
}

/**
 * Tool names as the model sees them: providers accept `^[a-zA-Z0-9_-]{1,64}$`, while MCP tools are
 * named `<server>.<tool>`. Maps both ways, keeping distinct tools distinct.
 */
export class ModelToolNames {
  private readonly toModel = new Map<string, string>();
  private readonly fromModel = new Map<string, string>();

  constructor(names: readonly string[]) {
    for (const name of names) {
      const base = name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 60) || 'tool';
      let candidate = base;
      for (let n = 2; this.fromModel.has(candidate); n += 1) candidate = `${base}_${n}`;
      this.toModel.set(name, candidate);
      this.fromModel.set(candidate, name);
    }
  }

  modelName(name: string): string {
    return this.toModel.get(name) ?? name;
  }

  toolName(modelName: string): string | undefined {
    return this.fromModel.get(modelName);
  }
}
