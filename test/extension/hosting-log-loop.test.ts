// The editor's extension host shares its event loop with every extension: the window that hosts the
// service (extension/hosting.ts) asks Service.begin for `sharedLoop`, which hands FileLogger (and its
// RotatingFile) `writeOnLoop: false`, so no log line is written by a synchronous write on that loop. The
// whole path is checked here from Hosting down, against the headless service (its own loop: lines are
// appended synchronously once the file is open), so dropping the flag at any step fails.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { Hosting } from '../../src/extension/hosting';
import { Service } from '../../src/service';
import { TEST_TOKEN } from '../helpers/service';
import { tempDir } from '../helpers/temp';

/** A data directory with its service.json. */
async function dataDir(t: TestContext): Promise<string> {
  const temp = await tempDir('ra-log-loop-');
  t.after(temp.cleanup);
  await writeFile(join(temp.dir, 'service.json'), JSON.stringify({ auth_token: TEST_TOKEN }));
  return temp.dir;
}

/** Counts the synchronous writes of log lines (JSON with an "event") on this thread while `run` runs. */
async function syncLogWrites(t: TestContext, run: () => Promise<void>): Promise<number> {
  const { writeSync } = fs;
  let count = 0;
  fs.writeSync = ((fd: number, buffer: unknown, ...rest: unknown[]) => {
    if (String(buffer).includes('"event":"')) count += 1;
    return (writeSync as (...args: unknown[]) => number)(fd, buffer, ...rest);
  }) as typeof writeSync;
  t.after(() => (fs.writeSync = writeSync));
  try {
    await run();
  } finally {
    fs.writeSync = writeSync;
  }
  return count;
}

/** Lines in the data directory's service.log. */
async function logLines(dir: string): Promise<number> {
  return (await readFile(join(dir, 'service.log'), 'utf8')).split('\n').filter(Boolean).length;
}

test("the window hosting the service writes no log line synchronously on the extension host's loop (sharedLoop from Hosting to RotatingFile); headless, lines are appended on the loop", async (t) => {
  // Headless (Service.begin without sharedLoop): once the log's file is open, its lines are written at once.
  const headlessDir = await dataDir(t);
  const headless = await syncLogWrites(t, async () => {
    const service = await Service.begin({ dataDir: headlessDir, port: 0, host: '127.0.0.1' });
    await service.start();
    await service.stop();
  });
  assert.ok(headless > 0, `headless: lines appended synchronously (${headless})`);

  // The same start and stop in the editor (Hosting): every line through libuv's pool.
  const editorDir = await dataDir(t);
  const editor = await syncLogWrites(t, async () => {
    const hosting = new Hosting({ dataDir: editorDir, port: () => 0, bindHost: '127.0.0.1', hostServices: {}, log: () => undefined, retry: { initialMs: 50, maxMs: 300 } });
    const { whole } = hosting.begin();
    assert.equal((await whole).state, 'hosting');
    assert.equal((await hosting.backend!.request({ type: 'get_config' })).status, 'ok');
    await hosting.stop();
  });
  assert.equal(editor, 0, 'no log line written synchronously on the shared loop');
  // Logged all the same: the lines headless wrote on its loop are in the file, through the pool.
  const lines = await logLines(editorDir);
  assert.ok(lines > headless, `${lines} lines in the editor's log (${headless} written synchronously headless)`);
});
