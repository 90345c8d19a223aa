/**
 * Runs tasks one at a time per key, in arrival order; different keys run in parallel.
 * (docs/protocol.md: messages of one conversation are processed one at a time.)
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task, task);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Resolves when every task queued so far has settled. */
  async idle(): Promise<void> {
    while (this.tails.size > 0) await Promise.all([...this.tails.values()]);
  }

  /** Whether a task of `key` is queued or running. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }

  /** The keys with a task queued or running. */
  keys(): string[] {
    return [...this.tails.keys()];
  }

  get activeKeys(): number {
    return this.tails.size;
  }
}
