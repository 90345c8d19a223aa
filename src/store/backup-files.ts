import { createWriteStream } from 'node:fs';
import { copyFile, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { PRIVATE_FILE_MODE } from '../platform/file-modes';

/** Writes `data` as `dir/name` (which must not exist), fsynced, and returns `name`. */
export async function writeDurably(dir: string, name: string, data: Uint8Array): Promise<string> {
  const handle = await open(path.join(dir, name), 'wx', PRIVATE_FILE_MODE);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return name;
}

async function fsyncFile(file: string): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Copies what an open file holds (from its start) to `to` (which must not exist), fsynced. */
export async function copyFromHandle(from: FileHandle, to: string): Promise<void> {
  await pipeline(from.createReadStream({ start: 0, autoClose: false }), createWriteStream(to, { flags: 'wx', mode: PRIVATE_FILE_MODE }));
  await fsyncFile(to);
}

/** Copies a file (it must not exist at `to`) and fsyncs the copy. */
export async function copyDurably(from: string, to: string): Promise<void> {
  await copyFile(from, to, 1 /* COPYFILE_EXCL */);
  await fsyncFile(to);
}
