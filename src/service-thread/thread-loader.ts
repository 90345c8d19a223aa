// dist/service-thread.js, the editor's service thread's entry (started by hosted-service.ts, or as the
// extension loads: early-thread.ts): it runs the thread's bundle (dist/service-thread-main.js, built from
// service-thread.ts) compiled with V8's code cache, at once, before the editor says what to serve (`boot`).
// The cache is this machine's own (an editor's V8 is its own version: a cache made by the build would be
// refused by most), written beside the bundle, in the extension's own folder (dist/cache/), once the first
// start's warm-up is over, and used from the next start on. Kept there rather than in the data directory
// (s26-s27), which only `boot` names: the compile and the modules' loading then run while the editor still
// loads and activates, and only the lock and the listen wait for `boot`. The folder is as trusted as the
// bundle it sits beside (whoever can write the cache can write the code); where it cannot be written (a
// read-only install), every start compiles without a cache, as the first one does.
import path from 'node:path';
import { parentPort } from 'node:worker_threads';
import { CodeCache } from '../platform/code-cache';
import { OTHER_VERSION_AGE_MS, removeStaleCaches } from './stale-caches';
import { wallNow, type LoaderMarks } from './start-marks';
import type { ThreadStart, ToThread } from './wire';

const began = wallNow();

interface Bundle {
  boot(start: ThreadStart, loading?: LoaderMarks): void;
  warmedUp: Promise<unknown>;
}

const cacheName = `service-thread-${process.versions.v8}.code`;
const cache = new CodeCache(path.join(__dirname, 'service-thread-main.js'), path.join(__dirname, 'cache', cacheName));
const stamp = cache.stamp();
const cached = cache.read();
const script = cache.compile(cached);
const compiled = wallNow();
const bundle = cache.run<Bundle>(script);
const marks: LoaderMarks = { loader: began, compiled, cached: cached !== undefined && script.cachedDataRejected !== true, loaded: wallNow() };

// What to serve comes with the editor's first message (`boot`), queued meanwhile.
const first = (message: ToThread) => {
  if (message.t !== 'boot') return;
  parentPort!.off('message', first);
  bundle.boot(message.start, marks);
  // After the warm-up (and the cache's write below, asked first): other V8 versions' caches beside this one,
  // and the data directory's of s26-s27 (stale-caches.ts).
  const prune = () => {
    void removeStaleCaches(path.dirname(cache.file), cacheName, OTHER_VERSION_AGE_MS)
      .then(() => removeStaleCaches(path.join(message.start.dataDir, 'cache'), undefined, 0, true))
      .catch(() => undefined);
  };
  void bundle.warmedUp.then(prune, prune);
};
parentPort!.on('message', first);

if (!marks.cached) {
  // Written with what the start compiled (its modules' loading, the warm-up's practice turn); never when
  // the bundle changed meanwhile. A failure to write (a read-only install, a full disk) only costs the next
  // start the compile.
  const write = () => {
    try {
      if (stamp.equals(cache.stamp())) cache.write(script, stamp);
    } catch {
      // compiled afresh next time
    }
  };
  void bundle.warmedUp.then(write, write);
}
