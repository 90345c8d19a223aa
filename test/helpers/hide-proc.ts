// /proc made absent for the lock module, which reads it with readFileSync: a platform without it (macOS,
// Windows) on Linux (test/helpers/lock-child.ts). Per thread: a worker thread calls it too.
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

export function hideProc(): void {
  const real = fs.readFileSync;
  fs.readFileSync = function readFileSync(this: unknown, file: unknown, ...rest: unknown[]) {
    if (String(file).startsWith('/proc/')) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${String(file)}'`), { code: 'ENOENT' });
    return (real as (...args: unknown[]) => unknown).call(this, file, ...rest);
  } as typeof fs.readFileSync;
  syncBuiltinESMExports();
}
