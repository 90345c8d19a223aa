/**
 * The bytes of files the page attached and the computer has not yet accepted with a message, kept over a reload
 * (the phone's browser drops a page in the background): IndexedDB, one record a file, under its machine's id, as a
 * Blob (read back only when uploaded again). Written when attached (at most MAX_ATTACHMENT_BYTES a file,
 * KEPT_BYTES in all), deleted when the message carrying it is answered or its chip removed. Not kept (no IndexedDB,
 * storage full, too large): a reload puts the message back to attach again (AttachmentTray, App.putBackUnfinished).
 */
import type { AttachmentInfo } from '../../protocol';
import { MAX_ATTACHMENT_BYTES } from '../../protocol/attachment-limit';

/** A kept file: its bytes, and its upload once finished (`done`). */
export interface KeptFile {
  key: string;
  name: string;
  mime: string;
  bytes: Blob;
  done?: AttachmentInfo;
}

const DB = 'remote-assistant.files';
const STORE = 'files';
/** What the page keeps of every machine's files in all. */
export const KEPT_BYTES = 100 * 1024 * 1024;

/** The page's kept files, every machine's, read once at the page's start; undefined: IndexedDB not there (or not answering). */
export async function openKeptFiles(waitMs = 2000): Promise<KeptFileStore | undefined> {
  const opened = new Promise<KeptFileStore | undefined>((resolve) => {
    try {
      const request = indexedDB.open(DB, 1);
      request.onupgradeneeded = () => request.result.createObjectStore(STORE);
      request.onerror = () => resolve(undefined);
      request.onsuccess = () => {
        const db = request.result;
        // Deleted elsewhere (another tab, the browser's settings): this page lets go, keeping nothing more.
        db.onversionchange = () => db.close();
        const all = db.transaction(STORE).objectStore(STORE).getAll();
        all.onsuccess = () => resolve(new KeptFileStore(db, all.result as (KeptFile & { machine: string })[]));
        all.onerror = () => resolve(undefined);
      };
    } catch {
      resolve(undefined);
    }
  });
  return Promise.race([opened, new Promise<undefined>((resolve) => setTimeout(resolve, waitMs))]);
}

export class KeptFileStore {
  private readonly records = new Map<string, KeptFile & { machine: string }>();

  constructor(
    private readonly db: IDBDatabase,
    records: (KeptFile & { machine: string })[],
  ) {
    for (const record of records) this.records.set(record.key, record);
  }

  /** One machine's files. */
  of(machine: string): KeptFiles {
    return {
      get: (key) => this.own(machine, key),
      byUpload: (id) => [...this.records.values()].find((r) => r.machine === machine && r.done?.attachment_id === id),
      put: (key, file) => this.put({ ...file, key, machine }),
      delete: (key) => this.own(machine, key) && this.delete(key),
      keepOnly: (keep) => {
        for (const r of [...this.records.values()]) if (r.machine === machine && !keep(r)) this.delete(r.key);
      },
    };
  }

  private own(machine: string, key: string): KeptFile | undefined {
    const record = this.records.get(key);
    return record?.machine === machine ? record : undefined;
  }

  private put(record: KeptFile & { machine: string }): void {
    const others = [...this.records.values()].reduce((sum, r) => sum + (r.key === record.key ? 0 : r.bytes.size), 0);
    if (record.bytes.size > MAX_ATTACHMENT_BYTES || others + record.bytes.size > KEPT_BYTES) return;
    this.records.set(record.key, record);
    // Not written (storage full, the store deleted): not kept.
    this.write((store) => store.put(record, record.key)).catch(() => this.records.get(record.key) === record && this.records.delete(record.key));
  }

  private delete(key: string): void {
    this.records.delete(key);
    void this.write((store) => store.delete(key)).catch(ignore);
  }

  private write(change: (store: IDBObjectStore) => IDBRequest): Promise<void> {
    return new Promise((resolve, reject) => {
      try {
        const transaction = this.db.transaction(STORE, 'readwrite');
        change(transaction.objectStore(STORE));
        transaction.oncomplete = () => resolve();
        transaction.onerror = transaction.onabort = () => reject(transaction.error ?? new Error('not kept'));
      } catch (error) {
        reject(error as Error);
      }
    });
  }
}

/** One machine's kept files (KeptFileStore.of). */
export interface KeptFiles {
  get(key: string): KeptFile | undefined;
  /** The kept file whose finished upload is `attachmentId`. */
  byUpload(attachmentId: string): KeptFile | undefined;
  /** Kept (written in the background); not kept (too large, storage full or gone): `get` finds nothing, nor does a reload. */
  put(key: string, file: Omit<KeptFile, 'key'>): void;
  delete(key: string): void;
  /** Deletes this machine's files `keep` does not answer true for. */
  keepOnly(keep: (file: KeptFile) => boolean): void;
}

function ignore(): void {}
