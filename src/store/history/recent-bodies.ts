import { bodyChars, type BodyOut, type KeyedBody } from './protocol';

/**
 * The bodies this process wrote last, by key, so the reads that follow a write (the agent's history of
 * the turn it is in, a reply read back by its followers) need no round trip to the history worker.
 * Bodies never change once written except by `cut` and deletion, which drop them here (history-store.ts).
 * Bounded in bodies and bytes: the oldest are forgotten first, and a read of them asks the worker.
 */
export class RecentBodies {
  private readonly bodies = new Map<number, Kept>();
  /**
   * What was kept, oldest first, from `head` on: the next to forget without walking the Map, whose
   * deleted slots stay at its front until it is rehashed (a walk from the start skipped up to ~1,000 of
   * them at every add once full). An entry dropped or replaced since is no longer the Map's: skipped.
   */
  private order: Array<{ key: number; kept: Kept }> = [];
  private head = 0;
  private bytes = 0;

  constructor(
    private readonly maxBodies = 1_024,
    private readonly maxBytes = 4 * 1024 * 1024,
  ) {}

  add(bodies: readonly KeyedBody[]): void {
    for (const b of bodies) {
      const size = 100 + bodyChars(b);
      if (size > this.maxBytes) continue;
      this.forget(b.key);
      const kept: Kept = { body: { key: b.key, content: b.content, data: b.data, cut: b.cut === true }, size };
      this.bodies.set(b.key, kept);
      this.order.push({ key: b.key, kept });
      this.bytes += size;
    }
    while (this.bodies.size > this.maxBodies || this.bytes > this.maxBytes) {
      const { key, kept } = this.order[this.head++];
      if (this.bodies.get(key) === kept) this.forget(key);
    }
    // The forgotten front let go once it is most of the array (and stale entries of drops with it).
    if (this.head > 64 && this.head * 2 > this.order.length) this.compact();
    else if (this.order.length - this.head > 2 * this.bodies.size + 64) this.compact();
  }

  get(key: number): BodyOut | undefined {
    return this.bodies.get(key)?.body;
  }

  drop(keys: readonly number[]): void {
    for (const key of keys) this.forget(key);
  }

  clear(): void {
    this.bodies.clear();
    this.order = [];
    this.head = 0;
    this.bytes = 0;
  }

  private forget(key: number): void {
    const kept = this.bodies.get(key);
    if (!kept) return;
    this.bytes -= kept.size;
    this.bodies.delete(key);
  }

  private compact(): void {
    const live: Array<{ key: number; kept: Kept }> = [];
    for (let i = this.head; i < this.order.length; i++) {
      const entry = this.order[i];
      if (this.bodies.get(entry.key) === entry.kept) live.push(entry);
    }
    this.order = live;
    this.head = 0;
  }
}

interface Kept {
  body: BodyOut;
  size: number;
}
