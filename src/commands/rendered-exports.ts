/**
 * Exports rendered for a download in pieces (export_conversation), kept between its pieces so each piece
 * is a slice of one rendering instead of a new read and rendering of the whole conversation (which made
 * a long download quadratic). Keyed by conversation, `until` and format: messages up to `until` never
 * change, so a kept text is the text the next piece would render. Bounded in characters and in time;
 * an export larger than the bound is rendered again for each piece, as before.
 */
export class RenderedExports {
  private readonly kept = new Map<string, { text: string; at: number }>();
  private chars = 0;

  constructor(
    private readonly maxChars = 32 * 1024 * 1024,
    private readonly ttlMs = 120_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The kept rendering of `key`, or `render()`'s, kept for the next piece when it fits the bound. */
  async get(key: string, render: () => Promise<string>): Promise<string> {
    this.expire();
    const hit = this.kept.get(key);
    if (hit !== undefined) {
      hit.at = this.now();
      return hit.text;
    }
    const text = await render();
    if (text.length <= this.maxChars && !this.kept.has(key)) {
      this.kept.set(key, { text, at: this.now() });
      this.chars += text.length;
      // Oldest first (insertion order), so a new download pushes out the one least likely to go on.
      for (const [old, entry] of this.kept) {
        if (this.chars <= this.maxChars) break;
        this.kept.delete(old);
        this.chars -= entry.text.length;
      }
    }
    return text;
  }

  /** Forgets every rendering of the conversation (it was deleted). */
  forget(conversationId: string): void {
    for (const [key, entry] of this.kept) {
      if (key.startsWith(`${conversationId}\0`)) {
        this.kept.delete(key);
        this.chars -= entry.text.length;
      }
    }
  }

  get size(): number {
    return this.kept.size;
  }

  private expire(): void {
    const oldest = this.now() - this.ttlMs;
    for (const [key, entry] of this.kept) {
      if (entry.at < oldest) {
        this.kept.delete(key);
        this.chars -= entry.text.length;
      }
    }
  }
}

/** The key of one export's rendering. */
export function renderedExportKey(conversationId: string, until: number, format: string): string {
  return `${conversationId}\0${until}\0${format}`;
}
