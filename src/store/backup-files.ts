import { copyFile, open } from 'node:fs/promises';
import path from 'node:path';
import { PRIVATE_FILE_MODE } from '../platform/file-modes';

/** Writes `data` as `dir/name`, fsynced, and returns `name`: a backup's file is whole once this resolves. */
export async function writeImage(dir: string, name: string, data: Uint8Array): Promise<string> {
  const handle = await open(path.join(dir, name), 'wx', PRIVATE_FILE_MODE);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return name;
}

/** Copies a file (it must not exist at `to`) and fsyncs the copy. */
export async function copyDurably(from: string, to: string): Promise<void> {
  await copyFile(from, to, 1 /* COPYFILE_EXCL */);
  const handle = await open(to, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
