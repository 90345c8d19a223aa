import type { Message } from '../../protocol';
import type { MessageRow } from '../../store';
import { attachmentInfoOf, storedAttachmentsOf } from './content';

/** A stored message as clients see it (get_messages, chat.message), with its attachments (a user's files, a tool result's image). */
export function messageOf(row: Pick<MessageRow, 'id' | 'role' | 'content' | 'timestamp'> & { data?: unknown }): Message {
  const attachments = storedAttachmentsOf(row.data).map(attachmentInfoOf);
  return { id: row.id, role: row.role, content: row.content, timestamp: row.timestamp, ...(attachments.length > 0 ? { attachments } : {}) };
}
