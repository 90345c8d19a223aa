import type { Store } from '../store';

/**
 * Resolves once what a read took from the store so far is durable: a turn's user message (its row's
 * `last_message` with it) is applied at once and fdatasynced later (docs/design.md "One durable commit for
 * a 0-tool turn"), and nothing may show it before. Waits for the journal's sync in flight, or asks for
 * the deferred one; at once when nothing waits. A journal that failed, or a full disk's owed records
 * (applied only once written; retried by their writers, not by reads), are their writers' errors: the
 * read answers what it read.
 */
export async function readDurable(store: Pick<Store, 'db'>): Promise<void> {
  await store.db.readable().catch(() => undefined);
}
