import type { Message } from '../protocol';
import type { MessageRow } from '../store';
import { attachmentInfoOf, storedAttachmentsOf } from './attachments/content';
import { contextOf } from './chat-context';
import { summaryDataOf } from './compaction/model-view';
import { packedMap } from '../platform/packed-map';

/**
 * A stored user, assistant or summary message as clients see it (chat.message, get_messages, exports): a user's
 * context chips, and the attachments it carries (a user's files, a tool result's image).
 */
export function messageOf(row: Pick<MessageRow, 'id' | 'role' | 'content' | 'timestamp'> & { data?: unknown }): Message {
  const context = row.role === 'user' ? contextOf(row.data) : undefined;
  const from = row.role === 'user' ? (row.data as { from?: unknown } | null | undefined)?.from : undefined;
  const attachments = packedMap(storedAttachmentsOf(row.data), attachmentInfoOf);
  const summary = summaryDataOf(row);
  return {
    id: row.id,
    role: row.role,
    content: row.content,
    timestamp: row.timestamp,
    ...(context ? { context } : {}),
    ...(typeof from === 'string' ? { from } : {}),
    ...(attachments.length > 0 ? { attachments } : {}),
    ...(summary?.kind === 'summary' ? { compaction: { status: 'summarised', messages: summary.summarised, ...(summary.focus ? { focus: summary.focus } : {}) } } : {}),
    ...(summary?.kind === 'compaction_failed' ? { compaction: { status: 'failed' } } : {}),
  };
}
