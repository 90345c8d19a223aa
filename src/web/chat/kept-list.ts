/**
 * Lists the page keeps for a reload in the machine's storage (the phone: localStorage, under the machine's
 * prefix; the editor's view has none): the outbox, and the message being written (its chips put back, its
 * tray's uploads). One reader and writer for them all.
 */

/** The machine's storage (machine-store.ts gives each paired machine its own); absent: memory only. */
export interface KeptStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/** The list kept under `key`, its items that pass `valid` (unreadable or absent: none). */
export function readKept<T>(storage: KeptStorage | undefined, key: string, valid: (item: T) => boolean): T[] {
  try {
    const value = JSON.parse(storage?.getItem(key) ?? '[]') as unknown;
    return Array.isArray(value) ? (value as T[]).filter((item) => item !== null && typeof item === 'object' && valid(item)) : [];
  } catch {
    return [];
  }
}

/** Keeps the list under `key`; storage full or refused, it lives in memory for this page's life. */
export function writeKept(storage: KeptStorage | undefined, key: string, items: readonly unknown[]): void {
  try {
    storage?.setItem(key, JSON.stringify(items));
  } catch {
    // As said: memory only.
  }
}
