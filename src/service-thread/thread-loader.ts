// dist/service-thread.js, the editor's service thread's entry (started by hosted-service.ts): it runs the
// thread's bundle (dist/service-thread-main.js, built from service-thread.ts) compiled with V8's code cache.
// The cache is this machine's own, written into the data directory once the first start's warm-up is over
// (an editor's V8 is its own version: a cache made by the build would be refused by most), and used from
// the next start on: the bundle's compile is on the way from the editor's activation to listening.
import path from 'node:path';
import { parentPort } from 'node:worker_threads';
import { CodeCache } from '../platform/code-cache';
import { wallNow, type LoaderMarks } from './start-marks';
import type { ThreadStart, ToThread } from './wire';

const began = wallNow();

interface Bundle {
  boot(start: ThreadStart, loading?: LoaderMarks): void;
  warmedUp: Promise<unknown>;
}

// The bundle, whose cache is kept in the data directory, is compiled once the editor said which (`boot`).
const first = (message: ToThread) => {
  if (message.t !== 'boot') return;
  parentPort!.off('message', first);
  load(message.start);
};
parentPort!.on('message', first);

function load(start: ThreadStart): void {
  const { dataDir } = start;
  const cache = new CodeCache(path.join(__dirname, 'service-thread-main.js'), path.join(dataDir, 'cache', `service-thread-${process.versions.v8}.code`));
  const stamp = cache.stamp();
  const cached = cache.read();
  const script = cache.compile(cached);
  const compiled = wallNow();
  const { boot, warmedUp } = cache.run<Bundle>(script);
  boot(start, { loader: began, compiled, cached: cached !== undefined && script.cachedDataRejected !== true, loaded: wallNow() });
  if (cached === undefined || script.cachedDataRejected === true) {
    // Written with what the start compiled (its modules' loading, the warm-up's practice turn); never when
    // the bundle changed meanwhile. A failure to write only costs the next start the compile.
    const write = () => {
      try {
        if (stamp.equals(cache.stamp())) cache.write(script, stamp);
      } catch {
        // a read-only or full disk: compiled afresh next time
      }
    };
    void warmedUp.then(write, write);
  }
}
