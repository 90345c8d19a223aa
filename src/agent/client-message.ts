import type { Message } from '../protocol';
import type { MessageRow } from '../store';
import { attachmentInfoOf, storedAttachmentsOf } from './attachments/content';
import { contextOf } from './chat-context';

/**
 * A stored user or assistant message as clients see it (chat.message, get_messages, exports): a user's
 * context chips, and the attachments it carries (a user's files, a tool result's image).
 */
export function messageOf(row: Pick<MessageRow, 'id' | 'role' | 'content' | 'timestamp'> & { data?: unknown }): Message {
  const context = row.role === 'user' ? contextOf(row.data) : undefined;
  const attachments = storedAttachmentsOf(row.data).map(attachmentInfoOf);
  return {
    id: row.id,
    role: row.role,
    content: row.content,
    timestamp: row.timestamp,
    ...(context ? { context } : {}),
    ...(attachments.length > 0 ? { attachments } : {}),
  };
}
