import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { Service } from '../../src/service';
import { writeConfig } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';

// The turn context's watches (git's HEAD and index, the instruction files' folders) are read ahead from
// listening on, before the store opens (Service.earlyWarmUp): a failed open or a stop lets them go, or
// each failed start of the editor's service would add inotify watches for the life of the editor.

/** The inotify watches this process holds now (Linux: libuv's inotify descriptor lists one line a watch). */
function inotifyWatches(): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    let target = '';
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    if (target !== 'anon_inode:inotify') continue;
    count += readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('inotify wd:')).length;
  }
  return count;
}

const linux = process.platform === 'linux';

async function workspace(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const ws = await tempDir('ra-context-ws-');
  execFileSync('git', ['init', '-q', ws.dir]);
  await writeFile(join(ws.dir, 'AGENTS.md'), 'Be brief.\n');
  return ws;
}

test('a failed open lets the turn context read ahead at listening go: no watch is left', { skip: !linux && 'inotify is Linux' }, async (t) => {
  const ws = await workspace();
  const temp = await tempDir('ra-context-failed-');
  t.after(async () => {
    await temp.cleanup();
    await ws.cleanup();
  });
  await writeConfig(temp.dir, { workspace: ws.dir });
  await writeFile(join(temp.dir, 'service.db'), 'not a database at all');
  const before = inotifyWatches();
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const service = await Service.begin({ dataDir: temp.dir, host: '127.0.0.1', port: 0, holdOpen: held });
  await service.start();
  // The read-ahead (git's status, the instruction files) keeps its answers watched while the open is held.
  await waitFor(() => inotifyWatches() > before, 'the read-ahead to watch what it read', 10_000);
  release();
  await assert.rejects(service.ready);
  await waitFor(() => inotifyWatches() === before, 'the watches to be let go after the failed open', 10_000);
});

test('stop lets the turn context go: no watch is left', { skip: !linux && 'inotify is Linux' }, async (t) => {
  const ws = await workspace();
  const temp = await tempDir('ra-context-stop-');
  t.after(async () => {
    await temp.cleanup();
    await ws.cleanup();
  });
  await writeConfig(temp.dir, { workspace: ws.dir });
  const before = inotifyWatches();
  const service = await Service.begin({ dataDir: temp.dir, host: '127.0.0.1', port: 0 });
  await service.start();
  await service.ready;
  await waitFor(() => inotifyWatches() > before, 'the read-ahead to watch what it read', 10_000);
  await service.stop();
  await waitFor(() => inotifyWatches() === before, 'the watches to be let go after stop', 10_000);
});
