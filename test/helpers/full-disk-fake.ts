// A full disk faked in this thread's FileHandles (the journal's: history.db writes in its worker): while
// on, writes (or fdatasyncs) fail with ENOSPC as a full disk's do. test/store/store-disk-full.test.ts
// fills a real tmpfs instead (it needs root); this one runs anywhere and can fail the sync alone.
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';

export interface FullDiskFake {
  /** Which calls fail with ENOSPC from now on: none, write() (no space for new bytes) or datasync(). */
  set(failing: 'none' | 'writes' | 'syncs'): void;
}

export async function fullDiskFake(t: { after: (fn: () => void) => void }): Promise<FullDiskFake> {
  const probe = await open(__filename, 'r');
  const proto = Object.getPrototypeOf(probe) as FileHandle;
  await probe.close();
  const { write, datasync } = proto;
  let failing: 'none' | 'writes' | 'syncs' = 'none';
  const full = () => Object.assign(new Error('ENOSPC: no space left on device (fake)'), { code: 'ENOSPC' });
  proto.write = function (this: FileHandle, ...args: unknown[]) {
    if (failing === 'writes') return Promise.reject(full());
    return (write as (...a: unknown[]) => Promise<unknown>).apply(this, args);
  } as FileHandle['write'];
  proto.datasync = function (this: FileHandle) {
    if (failing === 'syncs') return Promise.reject(full());
    return datasync.call(this);
  };
  t.after(() => {
    proto.write = write;
    proto.datasync = datasync;
  });
  return { set: (next) => (failing = next) };
}
