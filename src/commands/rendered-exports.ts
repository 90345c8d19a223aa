import { exportPiece, type ExportPiece } from './conversation-export';

/** Pieces made ahead at most at once (see RenderedExports.piece): one a download going on, for four downloads. */
const MOST_AHEAD = 4;
/** A piece made ahead and not asked for this long belongs to a download that stopped: a new one may take its place. */
const AHEAD_STALE_MS = 10_000;

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
  /** Pieces made ahead, by export key and offset (pieceKey), oldest first; and those due to be made. */
  private readonly ahead = new Map<string, { piece: ExportPiece; at: number }>();
  private readonly due = new Set<string>();
  /** Renderings under way, by key: a conversation forgotten meanwhile marks its own so they are not kept. */
  private readonly rendering = new Map<string, { forgotten: boolean }>();
  private served = 0;

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
    const underWay = { forgotten: false };
    this.rendering.set(key, underWay);
    let text: string;
    try {
      text = await render();
    } finally {
      if (this.rendering.get(key) === underWay) this.rendering.delete(key);
    }
    if (text.length <= this.maxChars && !this.kept.has(key) && !underWay.forgotten) {
      this.kept.set(key, { text, at: this.now() });
      this.chars += text.length;
      // Oldest first (insertion order), so a new download pushes out the one least likely to go on.
      for (const old of this.kept.keys()) {
        if (this.chars <= this.maxChars) break;
        this.drop(old);
      }
    }
    return text;
  }

  /**
   * The piece at `offset` of `text`, the rendering of `key`. A download asks for its pieces in order, each
   * once the last one came: while the client reads a piece, the next is made ahead (an immediate after
   * this one's answer went out), so its request finds it made. Only for a kept rendering; at most
   * MOST_AHEAD pieces are kept made ahead at once, dropped with their rendering.
   */
  piece(key: string, text: string, offset: number): ExportPiece {
    const at = pieceKey(key, offset);
    // Asked before it was made ahead: made now, and not again ahead.
    this.due.delete(at);
    const made = this.ahead.get(at)?.piece;
    if (made !== undefined) {
      this.ahead.delete(at);
      this.served += 1;
    }
    const piece = made ?? exportPiece(text, offset);
    const next = pieceKey(key, piece.end);
    if (piece.end < text.length && this.kept.get(key)?.text === text && !this.ahead.has(next) && !this.due.has(next)) {
      this.due.add(next);
      setImmediate(() => this.makeAhead(key, text, piece.end));
    }
    return piece;
  }

  /** Forgets every rendering of the conversation (it was deleted). */
  forget(conversationId: string): void {
    for (const key of this.kept.keys()) if (key.startsWith(`${conversationId}\0`)) this.drop(key);
    for (const [key, underWay] of this.rendering) if (key.startsWith(`${conversationId}\0`)) underWay.forgotten = true;
  }

  get size(): number {
    return this.kept.size;
  }

  /** How many pieces are made ahead and kept. */
  get piecesAhead(): number {
    return this.ahead.size;
  }

  /** How many pieces were asked for and found made ahead. */
  get piecesServedAhead(): number {
    return this.served;
  }

  private makeAhead(key: string, text: string, offset: number): void {
    const at = pieceKey(key, offset);
    // Asked for meanwhile, or its rendering gone.
    if (!this.due.delete(at) || this.kept.get(key)?.text !== text) return;
    // Full: the oldest gives way only when its download stopped; otherwise this one is not made ahead
    // (with more downloads than places, making and throwing away in turn would make every piece twice).
    if (this.ahead.size >= MOST_AHEAD) {
      const [oldest, { at: madeAt }] = this.ahead.entries().next().value!;
      if (this.now() - madeAt < AHEAD_STALE_MS) return;
      this.ahead.delete(oldest);
    }
    this.ahead.set(at, { piece: exportPiece(text, offset), at: this.now() });
  }

  /** Forgets a rendering and the pieces made ahead of it. */
  private drop(key: string): void {
    const entry = this.kept.get(key);
    if (entry === undefined) return;
    this.kept.delete(key);
    this.chars -= entry.text.length;
    for (const at of this.ahead.keys()) if (at.startsWith(`${key}\0`)) this.ahead.delete(at);
  }

  private expire(): void {
    const oldest = this.now() - this.ttlMs;
    for (const [key, entry] of this.kept) if (entry.at < oldest) this.drop(key);
  }
}

/** The key of a piece of a kept rendering: the rendering's key and the piece's offset. */
function pieceKey(key: string, offset: number): string {
  return `${key}\0${offset}`;
}

/** The key of one export's rendering. */
export function renderedExportKey(conversationId: string, until: number, format: string): string {
  return `${conversationId}\0${until}\0${format}`;
}
