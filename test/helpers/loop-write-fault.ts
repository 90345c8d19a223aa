// The journal's writes made on the loop (SegmentHandle.writeSync: a record that defers its sync, written
// at once when nothing else is in flight) made to fail as the disk would fail them: thrown synchronously,
// with `code` (ENOSPC: no room; EIO: the device failed). The pool's writes (FileHandle.write) are left alone.
import { SegmentHandle } from '../../src/store/segment-file';

export interface LoopWriteFault {
  /** The code the next loop writes fail with (none: they work). */
  set(code: 'none' | 'ENOSPC' | 'EIO'): void;
  /** Loop writes tried so far (failed or not). */
  count(): number;
}

export function loopWriteFault(t: { after: (fn: () => void) => void }): LoopWriteFault {
  const proto = SegmentHandle.prototype;
  const { writeSync } = proto;
  let failing: 'none' | 'ENOSPC' | 'EIO' = 'none';
  let calls = 0;
  proto.writeSync = function (this: SegmentHandle, data: Buffer, offset: number, length: number) {
    calls++;
    if (failing !== 'none') throw Object.assign(new Error(`${failing}: the disk refused the write (fake)`), { code: failing });
    return writeSync.call(this, data, offset, length);
  };
  t.after(() => {
    proto.writeSync = writeSync;
  });
  return { set: (code) => (failing = code), count: () => calls };
}
