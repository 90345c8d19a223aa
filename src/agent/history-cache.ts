import type { MessageRow, MessagesRepo } from '../store';

/**
 * The recent stored messages of the conversations being worked on, so each step of the tool loop reads
 * only what was stored since the last step instead of re-reading (and re-decoding) the history.
 * Messages are append-only, so "rows after the last seq seen" is always the complete update.
 */
export class HistoryCache {
  private readonly entries = new Map<string, MessageRow[]>();

  constructor(
    private readonly messages: Pick<MessagesRepo, 'recent' | 'after'>,
    private readonly maxRows = 500,
    private readonly maxConversations = 64,
  ) {}

  async rows(conversationId: string): Promise<MessageRow[]> {
    let rows = this.entries.get(conversationId);
    if (!rows) {
      rows = await this.messages.recent(conversationId, { limit: this.maxRows, includeTools: true });
    } else {
      const last = rows.length > 0 ? rows[rows.length - 1].seq : 0;
      const fresh = await this.messages.after(conversationId, last);
      if (fresh.length > 0) rows = [...rows, ...fresh].slice(-this.maxRows);
    }
    // Map order is insertion order: re-inserting keeps the most recently used last.
    this.entries.delete(conversationId);
    this.entries.set(conversationId, rows);
    if (this.entries.size > this.maxConversations) this.entries.delete(this.entries.keys().next().value!);
    return rows;
  }

  forget(conversationId: string): void {
    this.entries.delete(conversationId);
  }
}
