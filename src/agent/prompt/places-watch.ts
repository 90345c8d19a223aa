import { watch, type FSWatcher } from 'node:fs';
import path from 'node:path';

/**
 * Resolves in the check phase of the event loop's current turn; the calls of one turn share one
 * immediate. A change reaches a watcher's callback in the same poll phase as anything that finished
 * after it, so an answer still unchanged then is true for a call that began before.
 */
let checkPhase: Promise<void> | undefined;
export function nextCheckPhase(): Promise<void> {
  return (checkPhase ??= new Promise((resolve) =>
    setImmediate(() => {
      checkPhase = undefined;
      resolve();
    }),
  ));
}

/**
 * Watches the places of some files (`relative` to an existing `base`, which is watched too): `changed`
 * once one of them, or a folder on the way to it, is created, removed, renamed or written, or a watch
 * fails. Each folder holding one is watched (not its subfolders), and only the names that lead to the
 * files count: the data directory beside the user's AGENTS.md is written at every turn (the journal), a
 * project's root at every save, and neither may make an answer be looked at again. A folder that does
 * not exist (a root without `.github`), or is a file (a worktree's `.git`), is not watched: creating or
 * replacing it is a change of its name in its parent, which is. Watchers do not keep the process alive.
 * Used for what is asked on every command or turn and changes seldom: the instruction files of the roots
 * (instruction-files.ts), git's HEAD and index (git-status.ts). Together with nextCheckPhase, a change
 * finished before a call is seen by that call.
 */
export class PlacesWatch {
  changed = false;
  private readonly watchers: FSWatcher[] = [];

  constructor(files: { base: string; relative: string }[]) {
    const watched = new Set<string>();
    for (const [folder, names] of foldersOf(files)) {
      try {
        // No name (a platform that cannot tell) counts; so does the folder's own (it was removed or renamed).
        names.add(path.basename(folder));
        const watcher = watch(folder, { persistent: false }, (_event, name) => {
          if (name === null || names.has(name.toString())) this.change();
        });
        watcher.on('error', () => this.change());
        this.watchers.push(watcher);
        watched.add(folder);
      } catch (error) {
        // Missing (or a file) under a watched parent: its creation will be seen. Otherwise nothing would be.
        const code = (error as NodeJS.ErrnoException).code;
        if ((code !== 'ENOENT' && code !== 'ENOTDIR') || !watched.has(path.dirname(folder))) this.change();
      }
    }
  }

  /**
   * Stops watching; from then on the answer it guarded counts as changed. A change's event not read
   * yet is dropped with the watcher, and a call still waiting for the check phase (nextCheckPhase) on a
   * kept answer whose watch another call let go (a look at other roots) must look again, not trust it.
   */
  close(): void {
    this.changed = true;
    for (const watcher of this.watchers.splice(0)) watcher.close();
  }

  private change(): void {
    this.changed = true;
    this.close();
  }
}

/**
 * The folders to watch for `files` and the names in each that lead to one of them: `.github/copilot-instructions.md`
 * of a root is `.github` in the root and `copilot-instructions.md` in `<root>/.github`. Parents come first.
 */
function foldersOf(files: { base: string; relative: string }[]): Map<string, Set<string>> {
  const folders = new Map<string, Set<string>>();
  for (const { base, relative } of files) {
    let folder = base;
    for (const name of relative.split('/')) {
      if (!folders.has(folder)) folders.set(folder, new Set());
      folders.get(folder)!.add(name);
      folder = path.join(folder, name);
    }
  }
  return folders;
}
