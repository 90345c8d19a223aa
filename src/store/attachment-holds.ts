/**
 * Attachments a chat names that waits in line (accepted behind a running turn: its message, which binds them,
 * is stored when its turn comes), by id, with how many chats hold each; in memory only (a restart drops the
 * waiting chats too). While held, an unsent one is never pushed out of its person's bound
 * (commands/attachment-uploads.ts `keepNewestUnsent`), and a sent one is not dropped with the deletion of the
 * conversations that carry it (`dropConversationAttachments`): the waiting message binds it when stored.
 */
export class AttachmentHolds {
  private readonly counts = new Map<string, number>();

  /** Holds these attachments until `release` is called (once; a second call does nothing). */
  hold(attachmentIds: readonly string[]): () => void {
    for (const id of attachmentIds) this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const id of attachmentIds) {
        const count = (this.counts.get(id) ?? 1) - 1;
        if (count > 0) this.counts.set(id, count);
        else this.counts.delete(id);
      }
    };
  }

  has(attachmentId: string): boolean {
    return this.counts.has(attachmentId);
  }

  get size(): number {
    return this.counts.size;
  }

  /** The held ids, for a deletion's statements (journaled as its parameters, so replayed alike). */
  ids(): string[] {
    return [...this.counts.keys()];
  }
}
