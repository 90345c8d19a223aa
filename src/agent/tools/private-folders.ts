import { realpathSync } from 'node:fs';
import path from 'node:path';

/**
 * Folders no file tool opens, wherever the workspace lies: the data directories of the services of
 * this process (service.json holds the access token and the api_key; the database and log hold every
 * conversation). `serve` run from the home directory has the workspace ~ and the data directory
 * ~/.config/remote-assistant inside it; untrusted text steering the model (an opted-in webhook account,
 * a file it read), or a session user answering a prompt, must not read the owner's secrets or rewrite
 * service.json through read_file or write_file. Defence in depth: run_command, when allowed, is not
 * confined to the workspace at all.
 *
 * Kept per process rather than per tool registry: every folder is private to every service of the
 * process (one service's tools have no business in another's data either).
 */
const folders = new Map<string, number>();

function realOrResolved(folder: string): string {
  try {
    return realpathSync(folder);
  } catch {
    return path.resolve(folder);
  }
}

/** Keeps file tools out of `folder` until the returned function is called. */
export function keepToolsOut(folder: string): () => void {
  const real = realOrResolved(folder);
  folders.set(real, (folders.get(real) ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const count = (folders.get(real) ?? 1) - 1;
    if (count > 0) folders.set(real, count);
    else folders.delete(real);
  };
}

/** The real paths of the folders kept out of, now. */
export function privateFolders(): Iterable<string> {
  return folders.keys();
}
