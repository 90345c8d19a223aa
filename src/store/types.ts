export type MessageRole = 'user' | 'assistant' | 'tool';

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
  /** A user message sent with a client_message_id: its sender and that id, unique (commands/chat-resends.ts). */
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

/** One message found by MessagesRepo.search. */
export interface SearchHit {
  message_id: string;
  conversation_id: string;
  role: MessageRole;
  timestamp: string;
  seq: number;
  /** Text around the match. */
  snippet: string;
  /** Where the matched words are in `snippet`: [start, end) offsets (UTF-16). */
  highlights: Array<[number, number]>;
}
