// The config watcher reads service.json without the lock and reloads under it only when the text
// changed (config-file.ts changedOnDisk). Found in review of that change: a read still under way at
// close() queued a reload after it (a change emitted to a stopped service, the lock taken after the data
// directory was let go), and a second deletion of service.json after it came back unchanged was not
// reported.
import assert from 'node:assert/strict';
import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigFile } from '../../src/config/config-file';
import { CONFIG_FILE_NAME } from '../../src/platform/paths';
import { tempDir } from '../helpers/temp';

async function dirFor(t: { after: (fn: () => Promise<void>) => void }): Promise<string> {
  const { dir, cleanup } = await tempDir('ra-config-races-');
  t.after(cleanup);
  return dir;
}

const TOKEN = 'tok_0123456789abcdefghijklmnopqrstuvwxyz';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('a hand edit whose unlocked read is under way at close() is not applied after close', async (t) => {
  const dir = await dirFor(t);
  await writeFile(join(dir, CONFIG_FILE_NAME), JSON.stringify({ auth_token: TOKEN, model: 'good' }));
  const file = await ConfigFile.load(dir, { debounceMs: 0 });
  const changes: string[][] = [];
  file.on('change', (fields: string[]) => changes.push(fields));
  // The unlocked read made slow (as a loaded machine's thread pool makes it).
  const inner = file as unknown as { changedOnDisk: () => Promise<boolean> };
  const original = inner.changedOnDisk.bind(file);
  let reading = false;
  inner.changedOnDisk = async () => {
    reading = true;
    await sleep(100);
    return original();
  };
  file.watch();
  await writeFile(join(dir, 'e.swp'), JSON.stringify({ auth_token: TOKEN, model: 'edited' }));
  await rename(join(dir, 'e.swp'), join(dir, CONFIG_FILE_NAME));
  while (!reading) await sleep(5);
  await file.close();
  const atClose = changes.length;
  await sleep(500);
  assert.equal(changes.length, atClose, 'no change emitted after close()');
});

test('service.json deleted, restored as it was, deleted again: both deletions are reported', async (t) => {
  const dir = await dirFor(t);
  const path = join(dir, CONFIG_FILE_NAME);
  await writeFile(path, JSON.stringify({ auth_token: TOKEN, model: 'good' }));
  const warned: string[] = [];
  const logger = { info() {}, debug() {}, error() {}, warn: (event: string) => void warned.push(event) };
  const file = await ConfigFile.load(dir, { debounceMs: 20, logger: logger as never });
  t.after(() => file.close());
  const text = await readFile(path, 'utf8');
  file.watch();
  const waitFor = async (count: number) => {
    for (let i = 0; i < 200 && warned.filter((w) => w === 'config.file_missing').length < count; i += 1) await sleep(20);
  };
  await unlink(path);
  await waitFor(1);
  await writeFile(path, text); // restored as it was (a git checkout, an undo)
  await sleep(300);
  await unlink(path);
  await waitFor(2);
  assert.equal(warned.filter((w) => w === 'config.file_missing').length, 2);
});
