import type { Message } from '../../protocol';
import type { MessageRow } from '../../store';
import { attachmentInfoOf, storedAttachmentsOf } from './content';

/** A stored message as clients see it (get_messages, chat.message): a user message with its attachments. */
export function messageOf(row: Pick<MessageRow, 'id' | 'role' | 'content' | 'timestamp'> & { data?: unknown }): Message {
  const attachments = row.role === 'user' ? storedAttachmentsOf(row.data).map(attachmentInfoOf) : [];
  return { id: row.id, role: row.role, content: row.content, timestamp: row.timestamp, ...(attachments.length > 0 ? { attachments } : {}) };
}
