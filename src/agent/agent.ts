import { randomUUID } from 'node:crypto';
import { ServiceError, type ServiceConfig } from '../protocol';
import type { Logger } from '../log/logger';
import type { Store } from '../store';
import { ownerOf } from '../commands/session';
import { fitHistory } from './history';
import { KeyedQueue } from './keyed-queue';
import { ProviderError, type ChatMessage, type Provider } from './providers/types';

/** Tokens of history sent to the model, beside the reply's own `max_tokens`. */
const HISTORY_TOKEN_BUDGET = 24_000;
const HISTORY_MESSAGE_LIMIT = 500;
export const TITLE_LENGTH = 80;

export interface ChatInput {
  message: string;
  conversationId?: string;
  /** Source of the session: recorded on new conversations, and checked for ownership. */
  source: string;
  userId?: string;
  /** Overrides the configured model (a webhook account's `model`). */
  model?: string;
  signal?: AbortSignal;
  /** Called once the conversation is known (before the provider runs). */
  onConversation?: (conversationId: string, created: boolean) => void;
  onDelta?: (delta: string) => void;
}

export interface ChatOutput {
  response: string;
  conversation_id: string;
  message_id: string;
  cancelled?: boolean;
}

export type ProviderResolver = (config: ServiceConfig) => Provider;

export function titleOf(message: string): string {
  const line = message.replace(/\s+/g, ' ').trim();
  return [...line].slice(0, TITLE_LENGTH).join('') || 'New conversation';
}

/** The chat turn: store the user's message, ask the model, store the reply. */
export class Agent {
  private readonly queue = new KeyedQueue();

  constructor(
    private readonly deps: {
      store: Store;
      config: () => ServiceConfig;
      provider: ProviderResolver;
      logger: Logger;
    },
  ) {}

  async chat(input: ChatInput): Promise<ChatOutput> {
    const conversationId = input.conversationId ?? randomUUID();
    if (input.conversationId) this.requireConversation(input.conversationId, input.source);
    return this.queue.run(conversationId, () => this.turn(conversationId, !input.conversationId, input));
  }

  /** The conversation, if it exists and `source` may see it; else not_found. */
  requireConversation(conversationId: string, source: string) {
    const conversation = this.deps.store.conversations.get(conversationId);
    if (!conversation || ownerOf(conversation.source) !== ownerOf(source)) {
      throw new ServiceError('not_found', `conversation ${conversationId} not found`);
    }
    return conversation;
  }

  /** Resolves when every running turn has finished. */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  private async turn(conversationId: string, create: boolean, input: ChatInput): Promise<ChatOutput> {
    const { store, logger } = this.deps;
    const config = this.deps.config();
    const now = new Date().toISOString();
    if (create) {
      await store.conversations.create({ id: conversationId, title: titleOf(input.message), source: input.source, created_at: now });
    } else {
      this.requireConversation(conversationId, input.source);
    }
    await store.messages.append({
      id: randomUUID(),
      conversation_id: conversationId,
      role: 'user',
      content: input.message,
      timestamp: now,
      user_id: input.userId,
    });
    input.onConversation?.(conversationId, create);

    const history: ChatMessage[] = store.messages
      .recent(conversationId, { limit: HISTORY_MESSAGE_LIMIT, includeTools: false })
      .map((m) => ({ role: m.role === 'assistant' ? 'assistant' : 'user', content: m.content }));
    const system: ChatMessage | undefined = config.system_prompt ? { role: 'system', content: config.system_prompt } : undefined;
    const log = logger.child({ conversation: conversationId });
    const started = Date.now();
    let text = '';
    try {
      const result = await this.deps.provider(config).complete({
        model: input.model ?? config.model,
        temperature: config.temperature,
        max_tokens: config.max_tokens,
        messages: fitHistory(system, history, HISTORY_TOKEN_BUDGET),
        signal: input.signal,
        onDelta: input.onDelta
          ? (delta) => {
              text += delta;
              input.onDelta?.(delta);
            }
          : undefined,
      });
      text = result.text;
    } catch (error) {
      if (error instanceof ProviderError && error.kind === 'cancelled') {
        log.info('chat.cancelled', { ms: Date.now() - started });
        return { response: text, conversation_id: conversationId, message_id: '', cancelled: true };
      }
      log.warn('chat.provider_failed', { error, ms: Date.now() - started });
      if (error instanceof ProviderError) throw new ServiceError('server_error', error.message);
      throw error;
    }
    const messageId = randomUUID();
    await store.messages.append({
      id: messageId,
      conversation_id: conversationId,
      role: 'assistant',
      content: text,
      timestamp: new Date().toISOString(),
    });
    log.info('chat.answered', { ms: Date.now() - started, chars: text.length });
    return { response: text, conversation_id: conversationId, message_id: messageId };
  }
}
