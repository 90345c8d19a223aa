/**
 * Attachments a chat names that waits in line (accepted behind a running turn: its message, which binds them,
 * is stored when its turn comes), by id, with how many chats hold each; in memory only (a restart drops the
 * waiting chats too). While held, an unsent one is never pushed out of its person's bound
 * (commands/attachment-uploads.ts `keepNewestUnsent`), and a sent one is not dropped with the deletion of the
 * conversations that carry it (`dropConversationAttachments`): the waiting message binds it when stored.
 */
export class AttachmentHolds {
  private readonly counts = new Map<string, number>();
  /** Held ones an orphan pass left bound to a deleted conversation (`passedOver`): their release owes a pass. */
  private readonly passed = new Set<string>();

  /**
   * @param letGo called when the last hold on one the orphan pass passed over ends (a pass then drops it,
   * unless a message carries it by then): nothing else owes a collection, and its bytes stayed until some
   * later deletion or restart (attack36).
   */
  constructor(private readonly letGo: () => void = () => {}) {}

  /** Holds these attachments until `release` is called (once; a second call does nothing). */
  hold(attachmentIds: readonly string[]): () => void {
    for (const id of attachmentIds) this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      let owed = false;
      for (const id of attachmentIds) {
        const count = (this.counts.get(id) ?? 1) - 1;
        if (count > 0) this.counts.set(id, count);
        else {
          this.counts.delete(id);
          owed = this.passed.delete(id) || owed;
        }
      }
      if (owed) this.letGo();
    };
  }

  has(attachmentId: string): boolean {
    return this.counts.has(attachmentId);
  }

  get size(): number {
    return this.counts.size;
  }

  /** Notes held ones the orphan pass left bound to a deleted conversation (collectBlobs). */
  passedOver(attachmentIds: readonly string[]): void {
    for (const id of attachmentIds) if (this.counts.has(id)) this.passed.add(id);
  }
}

/** Nothing held (a deletion with no waiting chats to mind). */
export const NONE_HELD: Pick<AttachmentHolds, 'has'> = { has: () => false };
