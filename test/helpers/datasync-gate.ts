// The fdatasyncs of this thread's FileHandles (the journal's: history.db syncs in its worker), counted
// and, between hold() and release(), held before they start: writes reach the file, their commit waits.
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';

export interface DatasyncGate {
  /** sync + datasync calls since the gate was made. */
  count(): number;
  hold(): void;
  release(): void;
}

export async function datasyncGate(t: { after: (fn: () => void) => void }): Promise<DatasyncGate> {
  const probe = await open(__filename, 'r');
  const proto = Object.getPrototypeOf(probe) as FileHandle;
  await probe.close();
  const { sync, datasync } = proto;
  let calls = 0;
  let held: Promise<void> | undefined;
  let release = (): void => undefined;
  proto.sync = async function (this: FileHandle) {
    calls++;
    if (held) await held;
    return sync.call(this);
  };
  proto.datasync = async function (this: FileHandle) {
    calls++;
    if (held) await held;
    return datasync.call(this);
  };
  t.after(() => {
    proto.sync = sync;
    proto.datasync = datasync;
    release();
  });
  return {
    count: () => calls,
    hold: () => {
      held = new Promise((resolve) => (release = resolve));
    },
    release: () => {
      held = undefined;
      release();
    },
  };
}
