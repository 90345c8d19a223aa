import type { Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { openForReading } from '../anchored-fs';
import path from 'node:path';
import { firstUnits } from '../../../protocol/code-points';
import { defineTool } from '../define-tool';
import { BoundedMatcher } from '../bounded-matcher';
import { globTarget, globToRegExp } from '../glob';
import { formatBytes, looksBinary } from '../text-files';
import { ToolError, type Tool } from '../types';
import { inPrivateFolder, resolveWorkspacePath, workspaceSubject, type WorkspacePath, type WorkspaceRoots } from '../workspace';
import { statOrExplain } from './fs-errors';

export const SEARCH_MAX_MATCHES = 200;
export const SEARCH_MAX_FILES = 20_000;
export const SEARCH_MAX_FILE_BYTES = 4 * 1024 * 1024;
/** Time the pattern and glob may take to match, over the whole search (see BoundedMatcher). */
export const SEARCH_MATCH_TIME_LIMIT_MS = 5_000;
const MAX_LINE_CHARS = 300;
const SKIPPED_DIRS = new Set(['node_modules', '.git']);

function patternOf(pattern: string, ignoreCase: boolean): { regex: RegExp; literal: boolean } {
  const flags = ignoreCase ? 'i' : '';
  try {
    return { regex: new RegExp(pattern, flags), literal: false };
  } catch {
    // Not a valid regular expression (`foo(`, `a[`): the model meant the text itself.
    return { regex: new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), flags), literal: true };
  }
}

const byName = (a: Dirent, b: Dirent) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
const slashes = (p: string) => (path.sep === '\\' ? p.replace(/\\/g, '/') : p);

interface SearchState {
  matches: string[];
  filesScanned: number;
  skippedLarge: number;
  full: boolean;
}

export function searchFilesTool(roots: WorkspaceRoots): Tool {
  return defineTool({
    name: 'search_files',
    description:
      'Search the text files of the workspace for lines matching pattern, recursively; answers one line per match as ' +
      '`file:line: text`. pattern is a JavaScript regular expression (or, if it is not a valid one, plain text); to ' +
      'search for text with special characters such as . ( [ escape them or expect them to act as regex syntax. ' +
      'path limits the search to a folder or file; glob to file names (`*.ts`) or relative paths (`src/**/*.test.ts`). ' +
      `node_modules, .git, binary files and files over ${formatBytes(SEARCH_MAX_FILE_BYTES)} are skipped. ` +
      `At most ${SEARCH_MAX_MATCHES} matches are returned. Matching may take ${SEARCH_MATCH_TIME_LIMIT_MS / 1000} s in all: ` +
      'a pattern that backtracks (nested repetition such as (a+)+) is stopped with an error.',
    params: {
      pattern: { type: 'string', description: 'Regular expression (or plain text) to look for in each line.' },
      path: { type: 'string', optional: true, description: 'Folder or file to search, relative to the workspace folder (default: the workspace folder).' },
      glob: { type: 'string', optional: true, description: 'Only files whose name (or, if it contains /, relative path) matches, e.g. *.ts or src/**/*.json.' },
      ignore_case: { type: 'boolean', optional: true, description: 'Match regardless of case (default false).' },
    },
    subject: (args) => workspaceSubject(roots(), typeof args.path === 'string' ? args.path : undefined),
    async run(args, context) {
      if (args.pattern === '') throw new ToolError('pattern is empty');
      const workspace = roots();
      const shown = args.path ?? '.';
      const base = await resolveWorkspacePath(workspace, shown);
      const info = await statOrExplain(base.path, shown);
      const { regex, literal } = patternOf(args.pattern, args.ignore_case === true);
      const glob = args.glob ? { text: args.glob, regex: globToRegExp(args.glob) } : undefined;
      const state: SearchState = { matches: [], filesScanned: 0, skippedLarge: 0, full: false };
      const matcher = new BoundedMatcher(regex, glob?.regex, SEARCH_MATCH_TIME_LIMIT_MS, context.signal);

      /** Which of the files (paths relative to the base) the glob lets through. */
      const globAllows = async (relativePaths: string[]): Promise<boolean[]> =>
        glob && relativePaths.length > 0 ? matcher.matchingNames(relativePaths.map((rel) => globTarget(glob.text, rel))) : relativePaths.map(() => true);

      /** Searches one file, opened inside the workspace (see anchored-fs), so a folder swapped for a link cannot lead out. */
      const searchFile = async (target: WorkspacePath, shownAs: string) => {
        let raw: Buffer;
        try {
          const handle = await openForReading(target, shownAs);
          try {
            const info = await handle.stat();
            if (!info.isFile()) return;
            if (info.size > SEARCH_MAX_FILE_BYTES) {
              state.skippedLarge++;
              return;
            }
            state.filesScanned++;
            raw = await handle.readFile();
          } finally {
            await handle.close();
          }
        } catch (error) {
          if (error instanceof ToolError) return; // gone, or changed under us: search the rest
          throw error;
        }
        if (looksBinary(raw.subarray(0, 8192))) return;
        const display = slashes(path.relative(base.root, shownAs));
        const text = raw.toString('utf8');
        const { found, more } = await matcher.matchingLines(text, SEARCH_MAX_MATCHES - state.matches.length);
        if (found.length === 0 && !more) return;
        const lines = text.split(/\r?\n/);
        for (const i of found) {
          const line = lines[i].length > MAX_LINE_CHARS ? `${firstUnits(lines[i], MAX_LINE_CHARS)}...` : lines[i];
          state.matches.push(`${display}:${i + 1}: ${line}`);
        }
        if (more) state.full = true;
      };

      const walk = async (dir: string, relative: string): Promise<void> => {
        let entries: Dirent[];
        try {
          entries = await readdir(dir, { withFileTypes: true });
        } catch {
          return; // unreadable folder: search the rest
        }
        entries.sort(byName);
        const relOf = (entry: Dirent) => (relative ? `${relative}/${entry.name}` : entry.name);
        const candidates = entries.filter((entry) => !entry.isDirectory());
        const allowed = await globAllows(candidates.map(relOf));
        const globLets = new Set(candidates.filter((_, i) => allowed[i]));
        for (const entry of entries) {
          if (state.full || state.filesScanned >= SEARCH_MAX_FILES) return;
          if (context.signal.aborted) throw new ToolError('search cancelled');
          const full = path.join(dir, entry.name);
          if (entry.isDirectory()) {
            if (!SKIPPED_DIRS.has(entry.name) && !inPrivateFolder(full)) await walk(full, relOf(entry));
          } else if (!globLets.has(entry)) {
            continue;
          } else if (entry.isFile()) {
            await searchFile({ path: full, root: base.root, relative: slashes(path.relative(base.root, full)) }, full);
          } else if (entry.isSymbolicLink()) {
            // Linked files are searched when they lead to a file inside the workspace; linked folders
            // never (they may loop, or lead out).
            let linked: WorkspacePath;
            try {
              linked = await resolveWorkspacePath(workspace, full);
            } catch {
              continue;
            }
            await searchFile(linked, full);
          }
        }
      };

      try {
        if (info.isDirectory()) await walk(base.path, '');
        else if (!info.isFile()) throw new ToolError(`${shown} is neither a file nor a folder`);
        else if ((await globAllows([path.basename(base.path)]))[0]) await searchFile(base, base.path);
      } finally {
        await matcher.close();
      }

      const notes: string[] = [];
      if (literal) notes.push('[pattern is not a valid regular expression; it was searched as plain text]');
      if (state.full) notes.push(`[stopped at ${SEARCH_MAX_MATCHES} matches; narrow the search with path or glob]`);
      if (state.filesScanned >= SEARCH_MAX_FILES) notes.push(`[stopped after ${SEARCH_MAX_FILES} files; narrow the search with path or glob]`);
      if (state.skippedLarge > 0) notes.push(`[${state.skippedLarge} file(s) over ${formatBytes(SEARCH_MAX_FILE_BYTES)} skipped]`);
      if (state.matches.length === 0) {
        return { content: [`No matches for ${args.pattern} in ${base.relative}${glob ? ` (files matching ${glob.text})` : ''}.`, ...notes].join('\n') };
      }
      return { content: [...state.matches, ...notes].join('\n') };
    },
  });
}
