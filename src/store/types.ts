/** `summary`: earlier turns summarised for the model, or the notice that they could not be (agent/compaction). */
export type MessageRole = 'user' | 'assistant' | 'tool' | 'summary';

export interface ConversationRow {
  id: string;
  title: string;
  /** `editor`, `ws`, `webhook:<account>`. */
  source: string;
  created_at: string;
  updated_at: string;
  /** The first line of its last user or assistant message (previewOf), null when it has none. */
  last_message: string | null;
}

export interface NewConversation {
  id: string;
  title: string;
  source: string;
  created_at: string;
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

/** One message matching a search (MessagesRepo.search), newest first. */
export interface SearchHit {
  message_id: string;
  conversation_id: string;
  role: MessageRole;
  timestamp: string;
  seq: number;
  /** A piece of the message around the first match, whitespace collapsed, `…` where it was cut. */
  snippet: string;
  /** Where the query's words are in `snippet`: [start, end) in UTF-16 code units. */
  highlights: Array<[number, number]>;
}

export interface SearchOptions {
  conversationId?: string;
  /** At most this many hits (default 20). */
  limit?: number;
}
