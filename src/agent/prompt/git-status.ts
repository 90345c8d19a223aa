import { GitError, runGit } from '../../git/run-git';
import { nextCheckPhase, PlacesWatch } from './places-watch';

/** git gets this long to answer; a slower repository (or a hung filesystem) is left out of the turn. */
export const GIT_TIMEOUT_MS = 1000;
/** Enough for the status of tens of thousands of changed files; more is told as "many". */
const MAX_STATUS_BYTES = 4 * 1024 * 1024;

export interface GitSummary {
  /** The checked-out branch; `detached at <commit>`, or `<name> (no commits yet)`. */
  branch: string;
  /** Files changed, staged or not tracked (lines of `git status --porcelain`), or `many` when too many to count. */
  changed: number | 'many';
}

/**
 * The branch and the count of changed files of the repository holding `folder`, asked of the real git
 * through src/git (bounded time, no optional locks so it never writes the index while the user's own git
 * runs, nothing the repository's config names is run: this runs every turn, a webhook's included).
 * Submodules (each with a config of its own) are not looked into. Undefined when git is absent, the
 * folder is not a repository, or git is slow.
 */
export async function gitSummary(folder: string): Promise<GitSummary | undefined> {
  try {
    const { stdout, overflowed } = await runGit(['status', '--porcelain=v1', '--branch', '--untracked-files=normal', '--ignore-submodules=all'], {
      cwd: folder,
      timeoutMs: GIT_TIMEOUT_MS,
      maxBytes: MAX_STATUS_BYTES,
      readOnly: true,
      allowOverflow: true,
    });
    return summaryOf(stdout, overflowed);
  } catch (error) {
    if (error instanceof GitError) return undefined;
    throw error;
  }
}

/** A summary is asked of git again after this long at most, whatever else says it is unchanged. */
export const GIT_STATUS_MAX_AGE_MS = 10_000;
/**
 * Folders whose summary (and the watch of HEAD and the index, two inotify watches) is kept, most recently
 * asked first: every worktree conversation has a folder of its own, and a watch kept for each folder
 * ever asked would add up to the system's limit of watches.
 */
export const MAX_GIT_STATUS_FOLDERS = 64;

/**
 * gitSummary per folder, asked again only when it may have changed: git's HEAD or index changed (a
 * commit, checkout, stage), a tool of the agent wrote a file or ran a command (`changed()`), or
 * GIT_STATUS_MAX_AGE_MS passed (an edit made in the editor touches neither; past half of it, a turn
 * starts the next ask while it uses the kept answer). A status of a repository of
 * 10,000 files takes tens of milliseconds: more than the rest of a turn's own work. HEAD and the index
 * are watched (places-watch.ts), not looked at each turn: two stat calls a turn were two hand-offs to the
 * thread pool, each costing the loaded test machine about a millisecond (issue 25).
 */
export class GitStatusCache {
  private readonly entries = new Map<string, { watch: PlacesWatch | undefined; generation: number; at: number; summary: GitSummary | undefined }>();
  /** The asks under way: a turn sent while the warm-up's ask runs waits for its answer rather than starting another git. */
  private readonly asking = new Map<string, { generation: number; watch: ReturnType<typeof gitStateWatch>; summary: Promise<GitSummary | undefined> }>();
  private generation = 0;
  private closed = false;

  constructor(private readonly ask: (folder: string) => Promise<GitSummary | undefined> = gitSummary) {}

  /** Lets every watch go (the service stopped, or its open failed); an ask still under way keeps none. */
  close(): void {
    this.closed = true;
    for (const entry of this.entries.values()) entry.watch?.close();
    for (const pending of this.asking.values()) pending.watch?.close();
    this.entries.clear();
  }

  /** Files may have changed (a tool wrote one, or ran a command): every summary is asked again. */
  changed(): void {
    this.generation += 1;
  }

  async summary(folder: string, now = Date.now()): Promise<GitSummary | undefined> {
    const cached = this.entries.get(folder);
    if (cached && cached.generation === this.generation && now - cached.at < GIT_STATUS_MAX_AGE_MS && !cached.watch?.changed) {
      await nextCheckPhase();
      if (!cached.watch?.changed && this.entries.get(folder) === cached) {
        // The most recently asked: the last to let its watch go.
        this.entries.delete(folder);
        this.entries.set(folder, cached);
        // Past half its age, git is asked again now, for the turns to come: while turns keep coming,
        // none waits for git (each GIT_STATUS_MAX_AGE_MS, one turn waited for it, up to a second on a
        // loaded machine: issue 25). This answer is still within its age; a later turn past it joins that ask.
        if (now - cached.at >= GIT_STATUS_MAX_AGE_MS / 2 && !this.asking.has(folder)) this.askGit(folder, now).catch(() => undefined);
        return cached.summary;
      }
    }
    const pending = this.asking.get(folder);
    if (pending && pending.generation === this.generation && !pending.watch?.changed) {
      // Joined only while HEAD and the index are as when that ask began (a checkout meanwhile: ask again).
      await nextCheckPhase();
      if (!pending.watch?.changed) return pending.summary;
    }
    cached?.watch?.close();
    return this.askGit(folder, now);
  }

  /** Asks git, and keeps the answer as asked at `now` (an answer in force until then keeps its watch). */
  private async askGit(folder: string, now: number): Promise<GitSummary | undefined> {
    // Watched before git is asked: a change while it runs makes the answer one to ask again.
    const watch = gitStateWatch(folder);
    const generation = this.generation;
    const asked = { generation, watch, summary: this.ask(folder) };
    this.asking.set(folder, asked);
    let summary: GitSummary | undefined;
    try {
      summary = await asked.summary;
    } finally {
      if (this.asking.get(folder) === asked) this.asking.delete(folder);
    }
    if (this.closed) {
      watch?.close();
      return summary;
    }
    // Replaced at the newest end; past the bound the least recently asked folder lets its watch go.
    this.entries.get(folder)?.watch?.close();
    this.entries.delete(folder);
    this.entries.set(folder, { watch, generation, at: now, summary });
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= MAX_GIT_STATUS_FOLDERS) break;
      entry.watch?.close();
      this.entries.delete(oldest);
    }
    return summary;
  }
}

/** A watch of HEAD and the index; undefined where they cannot be watched (a folder inside a repository, or a worktree, has no .git folder of its own: then only time tells). */
function gitStateWatch(folder: string): PlacesWatch | undefined {
  const watch = new PlacesWatch([
    { base: folder, relative: '.git/HEAD' },
    { base: folder, relative: '.git/index' },
  ]);
  if (!watch.changed) return watch;
  watch.close();
  return undefined;
}

/** `## main...origin/main [ahead 1]` then one line per changed file. */
export function summaryOf(status: string, overflowed: boolean): GitSummary | undefined {
  const lines = status.split('\n').filter((line) => line.length > 0);
  const head = lines[0]?.startsWith('## ') ? lines[0].slice(3) : undefined;
  if (head === undefined) return undefined;
  const changed = overflowed ? 'many' : lines.length - 1;
  return { branch: branchOf(head), changed };
}

function branchOf(head: string): string {
  const initial = /^No commits yet on (.+)$/.exec(head) ?? /^Initial commit on (.+)$/.exec(head);
  if (initial) return `${initial[1]} (no commits yet)`;
  if (head.startsWith('HEAD (no branch)')) return 'detached HEAD';
  return head.split('...')[0].split(' ')[0];
}
