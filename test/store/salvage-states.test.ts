// Every state a salvage of history.db (serve --recover) can be stopped in, by a kill or a power cut, made
// by hand in a temp directory with salvage-aside.ts's own steps, then given to what every open does first
// (undoSalvage): cut short, the damaged file and its WAL come back as they were and the salvage's files go;
// done (its directory renamed aside), nothing is touched. Each step's rename is fsynced with its
// directories before the next one (renameDurably), so a power cut leaves one of these states, not a later
// step kept and an earlier one lost.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { createRebuild, keepAside, moveIntoSalvage, undoSalvage } from '../../src/store/history/salvage-aside';
import { tempDir } from '../helpers/temp';

const FILE = 'history.db';

/** A data directory with a "damaged" history.db and its WAL (their bytes only matter). */
async function damagedDir(t: { after: (fn: () => Promise<void>) => void }): Promise<{ dir: string; file: string }> {
  const { dir, cleanup } = await tempDir('salvage-states-');
  t.after(cleanup);
  const file = path.join(dir, FILE);
  await writeFile(file, 'the damaged file');
  await writeFile(`${file}-wal`, 'its wal');
  return { dir, file };
}

/** The damaged pair is back in place as it was, and nothing of the salvage is left. */
async function assertUndone(dir: string, file: string): Promise<void> {
  assert.equal(await readFile(file, 'utf8'), 'the damaged file');
  assert.equal(await readFile(`${file}-wal`, 'utf8'), 'its wal');
  assert.deepEqual((await readdir(dir)).sort(), [FILE, `${FILE}-wal`]);
}

const salvaging = (file: string) => `${file}.salvaging`;

test('cut short at each step (its directory made, the WAL moved, both moved, a rebuild made but not in place, in place and filled): the undo puts the pair back', async (t) => {
  const states: [string, (file: string) => Promise<void>][] = [
    ['its directory made, nothing moved', async (file) => void (await mkdir(salvaging(file)))],
    [
      'the WAL moved in, the file not',
      async (file) => {
        await mkdir(salvaging(file));
        await rename(`${file}-wal`, path.join(salvaging(file), `${FILE}-wal`));
      },
    ],
    ['both moved in', async (file) => void moveIntoSalvage(file)],
    [
      'a rebuild made and noted in the directory, not yet in place',
      async (file) => {
        moveIntoSalvage(file);
        createRebuild(file);
        // As if the rename into place had not happened: the rebuild back where it was made.
        await rename(file, path.join(salvaging(file), 'rebuild'));
      },
    ],
    [
      'the rebuild in place and written to, with its SQLite side files',
      async (file) => {
        moveIntoSalvage(file);
        createRebuild(file);
        await writeFile(file, 'rebuilt bodies');
        await writeFile(`${file}-wal`, 'the rebuild wal');
        await writeFile(`${file}-shm`, 'shm');
      },
    ],
  ];
  for (const [what, make] of states) {
    const { dir, file } = await damagedDir(t);
    await make(file);
    assert.equal(undoSalvage(file), true, what);
    await assertUndone(dir, file);
    assert.equal(undoSalvage(file), false, `${what}: nothing left to undo`);
  }
});

test('done (its directory renamed aside), also with its own files left in it by a kill: the next open touches nothing', async (t) => {
  for (const leftovers of [false, true]) {
    const { dir, file } = await damagedDir(t);
    moveIntoSalvage(file);
    createRebuild(file);
    await writeFile(file, 'rebuilt bodies');
    const aside = keepAside(file);
    if (leftovers) {
      // What a kill between the rename and the clean-up leaves (the fault point 'in-aside').
      await writeFile(path.join(aside, 'rebuild-id'), '1:2');
      await writeFile(path.join(aside, 'read'), '');
    }
    assert.equal(undoSalvage(file), false);
    assert.equal(await readFile(file, 'utf8'), 'rebuilt bodies');
    assert.equal(await readFile(path.join(aside, FILE), 'utf8'), 'the damaged file');
    assert.equal(await readFile(path.join(aside, `${FILE}-wal`), 'utf8'), 'its wal');
    assert.ok(!existsSync(salvaging(file)));
    if (!leftovers) assert.deepEqual((await readdir(aside)).sort(), [FILE, `${FILE}-wal`], 'the aside holds the pair only');
    await rm(aside, { recursive: true });
    assert.deepEqual(await readdir(dir), [FILE]);
  }
});
