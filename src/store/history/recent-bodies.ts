import { bodyChars, type BodyOut, type KeyedBody } from './protocol';

/**
 * The bodies this process wrote last, by key, so the reads that follow a write (the agent's history of
 * the turn it is in, a reply read back by its followers) need no round trip to the history worker.
 * Bodies never change once written except by `cut` and deletion, which drop them here (history-store.ts).
 * Bounded in bodies and bytes: the oldest are forgotten first, and a read of them asks the worker.
 */
export class RecentBodies {
  private readonly bodies = new Map<number, { body: BodyOut; size: number }>();
  private bytes = 0;

  constructor(
    private readonly maxBodies = 1_024,
    private readonly maxBytes = 4 * 1024 * 1024,
  ) {}

  add(bodies: readonly KeyedBody[]): void {
    for (const b of bodies) {
      const size = 100 + bodyChars(b);
      if (size > this.maxBytes) continue;
      if (this.bodies.has(b.key)) this.drop([b.key]);
      this.bodies.set(b.key, { body: { key: b.key, content: b.content, data: b.data, cut: b.cut === true }, size });
      this.bytes += size;
    }
    if (this.bodies.size <= this.maxBodies && this.bytes <= this.maxBytes) return;
    // Map order is insertion order: the oldest first.
    for (const [key] of this.bodies) {
      if (this.bodies.size <= this.maxBodies && this.bytes <= this.maxBytes) break;
      this.drop([key]);
    }
  }

  get(key: number): BodyOut | undefined {
    return this.bodies.get(key)?.body;
  }

  drop(keys: readonly number[]): void {
    for (const key of keys) {
      const kept = this.bodies.get(key);
      if (!kept) continue;
      this.bytes -= kept.size;
      this.bodies.delete(key);
    }
  }

  clear(): void {
    this.bodies.clear();
    this.bytes = 0;
  }
}
