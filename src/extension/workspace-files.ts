import { readFile } from 'node:fs/promises';
import { gitignoreGlob } from './gitignore-glob';
import { join } from 'node:path';
import * as vscode from 'vscode';

/** Most files one listing reads: a huge workspace still answers quickly. */
const MAX_SCANNED = 5_000;
/** Most matches one `#file` completion shows. */
export const MAX_MATCHES = 50;
/** How long one listing serves completions (typing asks on every key). */
const LISTING_TTL_MS = 10_000;

/**
 * Workspace files for `#file` completion, as VS Code's own quick open would offer them: found with
 * workspace.findFiles, leaving out `files.exclude`, `search.exclude` and what each folder's .gitignore
 * ignores (findFiles honours none of the latter two by itself).
 */
export class WorkspaceFiles {
  private listing: { at: number; files: Promise<string[]> } | undefined;

  /** Relative paths containing `query` (any case): name matches first, then shorter paths. */
  async matching(query: string): Promise<string[]> {
    const files = await this.all();
    const needle = query.toLowerCase();
    const scored = files
      .map((file) => ({ file, lower: file.toLowerCase() }))
      .filter(({ lower }) => lower.includes(needle))
      .map(({ file, lower }) => ({ file, rank: baseName(lower).includes(needle) ? 0 : 1 }));
    scored.sort((a, b) => a.rank - b.rank || a.file.length - b.file.length || a.file.localeCompare(b.file));
    return scored.slice(0, MAX_MATCHES).map(({ file }) => file);
  }

  private all(): Promise<string[]> {
    if (!this.listing || Date.now() - this.listing.at > LISTING_TTL_MS) {
      const files = list().catch((error: unknown) => {
        this.listing = undefined;
        throw error;
      });
      this.listing = { at: Date.now(), files };
    }
    return this.listing.files;
  }
}

async function list(): Promise<string[]> {
  const excludes = [...settingGlobs('files'), ...settingGlobs('search'), ...(await gitignoreGlobs())];
  // A folder pattern also covers what is inside it (findFiles matches the files' own paths).
  const exclude = excludes.length > 0 ? `{${excludes.flatMap((glob) => [glob, `${glob}/**`]).join(',')}}` : undefined;
  const uris = await vscode.workspace.findFiles('**/*', exclude, MAX_SCANNED);
  return uris.map((uri) => vscode.workspace.asRelativePath(uri, false));
}

/** The globs switched on in `files.exclude` or `search.exclude` (conditional `{when}` entries left aside). */
function settingGlobs(section: 'files' | 'search'): string[] {
  const entries = vscode.workspace.getConfiguration(section).get<Record<string, unknown>>('exclude') ?? {};
  return Object.entries(entries)
    .filter(([glob, on]) => on === true && !/[{}]/.test(glob))
    .map(([glob]) => glob);
}

/**
 * Each workspace folder's .gitignore as globs: `name` anywhere, `/name` or `a/b` from the folder,
 * `dir/` a folder. Negations (`!keep`) cannot be said in one exclude glob and are left out.
 */
async function gitignoreGlobs(): Promise<string[]> {
  const globs: string[] = [];
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    if (folder.uri.scheme !== 'file') continue;
    const text = await readFile(join(folder.uri.fsPath, '.gitignore'), 'utf8').catch(() => '');
    for (const raw of text.split(/\r?\n/)) {
      const glob = gitignoreGlob(raw);
      if (glob) globs.push(glob);
    }
  }
  return globs;
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}
