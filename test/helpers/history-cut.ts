// Cutting history.db short in tests, as an interrupted copy or a file system repaired after a crash does.
import assert from 'node:assert/strict';
import { open, stat, truncate } from 'node:fs/promises';
import { pageSizeOf, pagesInWal } from '../../src/store/history/integrity';

/**
 * Cuts `file` (history.db) so that pages are lost: to half, or lower so that at least the top quarter
 * of the pages its WAL does not hold are cut off. Pages whose newest version is in the WAL are read
 * from there, so a cut that takes only such pages loses nothing (SQLite reads the whole database) and
 * is rightly not refused, and one that takes a few loses only what they held (an index's pages, not
 * necessarily a body); whether the last checkpoint left the WAL covering the file's top half depends on
 * when it ran. The size cut to.
 */
export async function cutSoPagesAreLost(file: string): Promise<number> {
  const size = (await stat(file)).size;
  const header = Buffer.alloc(100);
  const fh = await open(file, 'r');
  await fh.read(header, 0, 100, 0);
  await fh.close();
  const pageSize = pageSizeOf(header);
  assert.ok(pageSize > 0, 'history.db has an SQLite header');
  const inWal = pagesInWal(`${file}-wal`, pageSize);
  const onlyInFile: number[] = []; // pages are numbered from 1
  for (let page = 1; page <= size / pageSize; page++) if (!inWal.has(page)) onlyInFile.push(page);
  assert.ok(onlyInFile.length >= 8, `history.db has pages its WAL does not hold (${onlyInFile.length})`);
  const quarterFromTop = onlyInFile[onlyInFile.length - Math.ceil(onlyInFile.length / 4)];
  const cut = Math.min(Math.floor(size / 2 / pageSize), quarterFromTop - 1) * pageSize;
  await truncate(file, cut);
  return cut;
}
