import { clientMessageIdOf, type ConversationRow, type MessageRow, type UsageRepo } from '../store';
import { messageUsageOf } from '../agent/usage/usage-wire';
import type { ExportFormat, Message } from '../protocol';
import type { ToolCallData, ToolResultData } from '../agent/transcript';
import { messageOf } from '../agent/client-message';
import { bytesWithRoom } from '../protocol/wire-text';

/** Version of the JSON export's shape; bumped when a field changes meaning or goes away. */
export const EXPORT_JSON_VERSION = 1;

/** The JSON export: the conversation and every message, tool calls and results included, oldest first. */
export interface ConversationExport {
  format: 'remote-assistant.conversation';
  version: typeof EXPORT_JSON_VERSION;
  conversation: { id: string; title: string; source: string; created_at: string };
  messages: Message[];
}

/** What a stored `tool` message adds for clients: which tool, call or result, and the result's outcome. */
export function toolFields(m: MessageRow): Partial<Message> {
  if (m.role !== 'tool') return {};
  const data = m.data as ToolCallData | ToolResultData | null;
  return {
    ...(m.tool_name ? { tool_name: m.tool_name } : {}),
    ...(data?.kind ? { tool_kind: data.kind } : {}),
    ...(typeof data?.call_id === 'string' ? { call_id: data.call_id } : {}),
    ...(data?.kind === 'result' ? { ok: data.ok, denied: data.denied === true, ...(data.detail ? { detail: data.detail } : {}) } : {}),
  };
}

/** A stored message as clients see it (get_messages, exports): the chat's view of it plus its tool fields and the client_message_id it was sent with. */
function clientMessageOf(m: MessageRow): Message {
  return { ...messageOf(m), ...toolFields(m), ...(m.client_key ? { client_message_id: clientMessageIdOf(m.client_key) } : {}) };
}

/** Stored messages as clients see them (get_messages, exports), each reply with its usage. */
export async function clientMessagesOf(rows: readonly MessageRow[], usage: Pick<UsageRepo, 'ofMessages'>): Promise<Message[]> {
  const counted = await usage.ofMessages(
    rows.map((m) => m.id),
    rows[0]?.conversation_id,
  );
  return rows.map((m) => {
    const spent = counted.get(m.id);
    return { ...clientMessageOf(m), ...(spent ? { usage: messageUsageOf(spent) } : {}) };
  });
}

/** A fence of backticks longer than any run of backticks in `text` (at least three), so the text cannot close it. */
export function fenceFor(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  return '`'.repeat(Math.max(3, longest + 1));
}

function fenced(text: string, language = ''): string {
  const fence = fenceFor(text);
  return `${fence}${language}\n${text}${text.endsWith('\n') ? '' : '\n'}${fence}`;
}

function markdownMessage(m: Message): string {
  if (m.role === 'user') return `## You · ${m.timestamp}\n\n${m.content}`;
  if (m.role === 'assistant') return `## Assistant · ${m.timestamp}\n\n${m.content}`;
  const tool = m.tool_name ?? 'tool';
  if (m.tool_kind === 'call') return `### Tool call: ${tool} · ${m.timestamp}\n\n${fenced(m.content, 'json')}`;
  const outcome = m.denied ? 'denied' : m.ok === false ? 'failed' : 'ok';
  return `### Tool result: ${tool} (${outcome}) · ${m.timestamp}\n\n${fenced(m.content)}`;
}

/** The whole conversation as one file's text. */
export function renderExport(conversation: ConversationRow, messages: Message[], format: ExportFormat): string {
  if (format === 'json') {
    const { id, title, source, created_at } = conversation;
    const doc: ConversationExport = { format: 'remote-assistant.conversation', version: EXPORT_JSON_VERSION, conversation: { id, title, source, created_at }, messages };
    return `${JSON.stringify(doc, null, 2)}\n`;
  }
  const header = `# ${conversation.title.replace(/\s+/g, ' ')}\n\n_Remote Assistant conversation ${conversation.id}, started ${conversation.created_at}, ${messages.length} messages._`;
  const parts = [header, ...messages.map(markdownMessage)];
  // The file's last newline in its last part: join's result is one flat string, where `${joined}\n` was a
  // rope that the first piece's slice copied whole again (10 MB, ~30 ms here).
  parts[parts.length - 1] += '\n';
  return parts.join('\n\n');
}

/** A file name from the title: letters, digits, spaces, `-` and `_` kept, at most 60 characters. */
export function exportFileName(title: string, format: ExportFormat): string {
  const base =
    title
      .replace(/[^\p{L}\p{N} _-]+/gu, ' ')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, 60)
      .trim() || 'conversation';
  return `${base}.${format === 'json' ? 'json' : 'md'}`;
}

/**
 * Characters of one export piece at the least: even if every one were escaped to six bytes in the
 * frame's JSON (`\u0001`), a piece this long stays under 1 MiB.
 */
export const EXPORT_PIECE_CHARS = 128 * 1024;
/** A piece holds up to this many characters while its text, as the frame carries it, fits EXPORT_PIECE_BYTES. */
const EXPORT_PIECE_MAX_CHARS = 768 * 1024;
const EXPORT_PIECE_BYTES = 900 * 1024;

/** `offset + chars`, within the text and never between the two halves of a surrogate pair. */
function boundedEnd(text: string, offset: number, chars: number): number {
  let end = Math.min(text.length, offset + chars);
  if (end < text.length && end > offset + 1) {
    const code = text.charCodeAt(end - 1);
    if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  }
  return end;
}

/** One piece of an export: where it ends, and its text as JSON in UTF-8 (what its frame carries). */
export interface ExportPiece {
  end: number;
  json: Buffer;
}

/**
 * Characters of a piece serialized at once: the JSON of so few (at most 48 K characters, 96 KB) stays
 * in V8's young generation, where a megabyte string is a large object: new pages each time, which cost
 * more to touch than the serializing (here about 4 ms a megabyte) and a copy of the whole (JSON.stringify
 * returns a rope, flattened again to be measured or encoded).
 */
const CHUNK_CHARS = 8 * 1024;
/** Free bytes before and after a piece's JSON in its buffer, for its answer's other fields and its frame's head and tail (ws-frames.ts frames it in place). */
const PIECE_ROOM = 2048;
const QUOTE = 0x22;

/**
 * The piece starting at `offset`: where it ends, as long as its frame stays under 1 MiB (most text needs
 * no escaping, so a piece is up to six times EXPORT_PIECE_CHARS and a long download takes fewer round
 * trips), never shorter than EXPORT_PIECE_CHARS; and its text as JSON in UTF-8, the measure of its frame,
 * which the answer then carries as it is (wire-text.ts `withDataText`) instead of serializing, measuring
 * and encoding it again. Serialized a chunk at a time straight into the piece's own buffer, with room
 * around it for its frame (wire-text.ts `bytesWithRoom`); a piece ends between chunks, before the one
 * that would take its JSON past EXPORT_PIECE_BYTES, and never between the halves of a surrogate pair.
 */
export function exportPiece(text: string, offset: number): ExportPiece {
  const last = boundedEnd(text, offset, EXPORT_PIECE_MAX_CHARS);
  // At most six bytes a character (`\u0001`); a chunk is written before it is found too long, so the room
  // past EXPORT_PIECE_BYTES holds one: a write is never cut short.
  const most = Math.min(6 * (last - offset), EXPORT_PIECE_BYTES + 6 * CHUNK_CHARS) + 2;
  const room = Buffer.allocUnsafeSlow(PIECE_ROOM + most + PIECE_ROOM);
  let at = PIECE_ROOM;
  room[at++] = QUOTE;
  let end = offset;
  while (end < last) {
    const next = boundedEnd(text, end, Math.min(CHUNK_CHARS, last - end));
    const json = JSON.stringify(text.slice(end, next));
    const written = room.write(json.slice(1, -1), at);
    // Any EXPORT_PIECE_CHARS characters fit (six bytes each at most): a piece this long is never shorter.
    if (at + written + 1 - PIECE_ROOM > EXPORT_PIECE_BYTES) break;
    at += written;
    end = next;
  }
  // The six-bytes bound is what keeps the room after the JSON free for the frame's tail (review25a): were it
  // ever wrong, the write would have spilled into that room unseen.
  if (at + 1 > PIECE_ROOM + most) throw new Error('exportPiece: a piece outgrew its measure');
  room[at++] = QUOTE;
  return { end, json: bytesWithRoom(room, PIECE_ROOM, at) };
}
