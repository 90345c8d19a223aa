import type { MessageRole, SearchHit } from '../protocol';

/** `summary`: earlier turns summarised for the model, or the notice that they could not be (agent/compaction). */
export type { MessageRole };

export interface ConversationRow {
  id: string;
  title: string;
  /** `editor`, `ws`, `webhook:<account>`. */
  source: string;
  created_at: string;
  updated_at: string;
  /** The first line of its last user or assistant message (previewOf), null when it has none. */
  last_message: string | null;
  /** Who started it, as people read it (Message.from of its first message); null for a webhook's or an older one. */
  started_by: string | null;
}

export interface NewConversation {
  id: string;
  title: string;
  source: string;
  created_at: string;
  /** Who started it, as people read it (a paired device's name, a password user's, `editor`). */
  started_by?: string;
}

export interface MessageRow {
  /** Insertion order across the whole database. */
  seq: number;
  id: string;
  conversation_id: string;
  role: MessageRole;
  content: string;
  timestamp: string;
  tool_name: string | null;
  user_id: string | null;
  /** Whatever was given as `data` (stored as JSON), null when none. */
  data: unknown;
  /** A user message sent with a client_message_id: its sender and that id, unique (commands/turns/chat-resends.ts). */
  client_key: string | null;
}

export interface NewMessage {
  id: string;
  conversation_id: string;
  role: MessageRole;
  content: string;
  timestamp: string;
  tool_name?: string | null;
  user_id?: string | null;
  data?: unknown;
  client_key?: string | null;
}

export interface MemoryRow {
  id: string;
  content: string;
  created_at: string;
  updated_at: string;
}

export interface RegistrationRow {
  machine_name: string;
  public_key: string;
  created_at: string;
  updated_at: string;
}

/**
 * One message matching a search (MessagesRepo.search), newest first: the protocol's search hit before
 * its conversation's title is joined (commands/history-handlers.ts), with its place in the history.
 */
export type MessageMatch = Omit<SearchHit, 'conversation_title'> & { seq: number };

export interface SearchOptions {
  conversationId?: string;
  /** At most this many hits (default 20). */
  limit?: number;
}
