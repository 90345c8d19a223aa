// Runs in their own git worktree (issue 24; docs/protocol.md, "Worktrees"): a conversation that asked
// for one works in a folder of its own, on a branch of its own made from the workspace's HEAD, outside
// the user's working tree; every tool of it is confined there (agent.ts hands its tools that folder as
// their only root). git runs through src/git (no hook, filter or fsmonitor of the repository runs).
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ServiceError, webhookAccountsOf, type ServiceConfig } from '../../protocol';
import type { Source } from '../../protocol/sources';
import type { WorktreeInfo, WorktreeRecord } from '../../protocol/worktrees';
import type { Logger } from '../../log/logger';
import type { StoredWorktree, Store } from '../../store';
import { changeStatsOf } from '../../git/changes';
import { branchLanded } from '../../git/land';
import { GitError, runGit, type GitResult } from '../../git/run-git';
import { branchNameOf, folderNameOf } from './names';

/** How many names a new worktree tries (`-2`, `-3`...) before giving up: each taken one is a branch or folder already there. */
const MAX_NAME_ATTEMPTS = 20;
/** git gets this long for a worktree's checkout (a large repository's files are all written). */
const ADD_TIMEOUT_MS = 120_000;

export interface WorktreesDeps {
  store: Pick<Store, 'worktrees'>;
  config: () => ServiceConfig;
  /** The workspace folders in force (the repository is the first that is a git repository's top level). */
  workspaceRoots: () => string[];
  logger: Logger;
}

/** Whether a new conversation from `source` gets a worktree when its chat does not say (service.json `worktrees.default`, a webhook account's `worktree`). */
export function worktreeByDefault(config: ServiceConfig, source: Source): boolean {
  const defaults = config.worktrees.default;
  switch (source.kind) {
    case 'webhook':
      return worktreeRequired(config, source) || defaults.webhook;
    case 'editor':
      return defaults.editor;
    case 'lan':
      return defaults.lan;
    case 'relay':
      return defaults.relay;
  }
}

/** A webhook account whose conversations must have a worktree (a chat cannot ask otherwise). */
export function worktreeRequired(config: ServiceConfig, source: Source): boolean {
  return source.kind === 'webhook' && webhookAccountsOf(config).get(source.account)?.worktree === 'required';
}

/** The worktrees of conversations: made, looked up, checked before each turn, counted after it, cleaned up at start. */
export class Worktrees {
  constructor(private readonly deps: WorktreesDeps) {}

  /** The conversation's worktree, if it has one (any state). */
  of(conversationId: string): StoredWorktree | undefined {
    return this.deps.store.worktrees.get(conversationId);
  }

  /**
   * Makes a worktree for a new conversation: `git worktree add -b assistant/<slug>-<id> <folder> <HEAD's
   * commit>` in the workspace's repository, and its row. Nothing of the user's working tree changes (git
   * writes the new folder and, in the repository's .git, the branch and the worktree's admin files).
   * Every failure is a clear `conflict`: no repository, no git, no commit yet, a folder setting inside
   * the repository.
   */
  async create(conversationId: string, title: string, now = new Date()): Promise<WorktreeRecord> {
    const { repository, baseCommit, baseBranch } = await this.origin();
    const folder = await this.folderFor(repository);
    for (let attempt = 1; attempt <= MAX_NAME_ATTEMPTS; attempt += 1) {
      const branch = branchNameOf(title, conversationId, attempt);
      const where = path.join(folder, folderNameOf(title, conversationId, attempt));
      if (await exists(where)) continue;
      try {
        await runGit(['worktree', 'add', '--quiet', '-b', branch, where, baseCommit], { cwd: repository, timeoutMs: ADD_TIMEOUT_MS });
      } catch (error) {
        // A branch or folder of that name (another conversation's, or made meanwhile): try the next name.
        // git checks both before it writes anything, so asking it is the one check (no show-ref first).
        if (error instanceof GitError && /already exists/.test(error.stderr)) continue;
        throw gitFailure(error, 'the worktree could not be made', { [where]: "the new worktree's folder", [folder]: 'the worktrees folder', [repository]: 'the repository' });
      }
      const record: WorktreeRecord = { conversationId, repository, path: await realpath(where), branch, baseBranch, baseCommit, state: 'active', createdAt: now.toISOString() };
      await this.deps.store.worktrees.insert(record);
      this.deps.logger.info('worktree.created', { conversation: conversationId, branch });
      return record;
    }
    throw new ServiceError('conflict', `no free branch name for this conversation after ${MAX_NAME_ATTEMPTS} tries (assistant/${folderNameOf(title, conversationId)}-N)`);
  }

  /**
   * The folder a conversation's tools work in, checked before a turn: its worktree's, or undefined for a
   * conversation of the workspace. A worktree whose folder was deleted outside the service becomes
   * `missing` and its turns are refused (its branch is kept in the repository).
   */
  async rootOf(conversationId: string): Promise<string | undefined> {
    const record = this.of(conversationId);
    if (!record) return undefined;
    if (record.state === 'active' && !(await isFolder(record.path))) {
      await this.deps.store.worktrees.setState(conversationId, 'missing');
      this.deps.logger.warn('worktree.missing', { conversation: conversationId });
      return refuse({ ...record, state: 'missing' });
    }
    if (record.state !== 'active') return refuse(record);
    return record.path;
  }

  /**
   * Counts what list_conversations shows, once at a turn's end (never a git call per listed row): files
   * that differ from the base commit, committed or not, untracked included; whether the base branch moved.
   */
  async refreshStats(conversationId: string): Promise<void> {
    const record = this.of(conversationId);
    if (!record || record.state !== 'active') return;
    await storeChangeStats(this.deps.store.worktrees, record, this.deps.logger);
  }

  /** What list_conversations shows of a conversation's worktree (from the row: counts as of its last turn). */
  info(conversationId: string): WorktreeInfo | null {
    const record = this.of(conversationId);
    return record ? infoOf(record) : null;
  }

  /**
   * At start: the worktrees of conversations deleted since are removed (`git worktree remove --force`:
   * what was not committed in them goes with the conversation). Its branch is deleted only when it holds
   * no commit beyond its base; a branch with commits is kept (they may be the person's only copy of
   * that work, and a branch costs nothing). Only rows made before `madeBefore` (the service's open): a
   * new conversation's worktree is made before its conversation is stored, and is no orphan.
   */
  async removeOrphans(madeBefore: string): Promise<number> {
    let removed = 0;
    for (const record of this.deps.store.worktrees.orphans(madeBefore)) {
      const log = this.deps.logger.child({ conversation: record.conversationId, branch: record.branch });
      try {
        if (await isFolder(record.repository)) {
          if (await isFolder(record.path)) await runGit(['worktree', 'remove', '--force', record.path], { cwd: record.repository });
          else await runGit(['worktree', 'prune'], { cwd: record.repository });
          const ahead = await runGit(['rev-list', '--count', `${record.baseCommit}..refs/heads/${record.branch}`], { cwd: record.repository, okCodes: [128] });
          if (ahead.code === 0 && ahead.stdout.trim() === '0') await runGit(['branch', '-D', record.branch], { cwd: record.repository });
          else if (ahead.code === 0) log.info('worktree.branch_kept', { commits: Number(ahead.stdout.trim()) });
        }
        await this.deps.store.worktrees.remove(record.conversationId);
        removed += 1;
        log.info('worktree.removed', {});
      } catch (error) {
        log.warn('worktree.remove_failed', { error: error instanceof Error ? error.message : String(error) });
      }
    }
    return removed;
  }

  /**
   * At start: an `active` worktree whose branch is in its base branch already is `landed` (a land killed
   * right after its fast-forward moved the base branch but never wrote the row). The reads first, then
   * the rows, so a row seen `landed` means every worktree was looked at.
   */
  async markLanded(): Promise<number> {
    const active = this.deps.store.worktrees.list().filter((record) => record.state === 'active');
    const landed = await Promise.all(
      active.map((record) =>
        branchLanded(record).catch((error: unknown) => {
          this.deps.logger.warn('worktree.landed_check_failed', { conversation: record.conversationId, error: error instanceof Error ? error.message : String(error) });
          return false;
        }),
      ),
    );
    const found = active.filter((_, i) => landed[i]);
    for (const record of found) {
      await this.deps.store.worktrees.setState(record.conversationId, 'landed');
      this.deps.logger.info('worktree.landed_found', { conversation: record.conversationId, branch: record.branch });
    }
    return found.length;
  }

  /**
   * The first workspace folder that is a git repository's top level (its real path), with HEAD's commit
   * and branch (null on a detached HEAD: the worktree's changes are shown against its commit), in one
   * `git rev-parse` per folder tried.
   */
  private async origin(): Promise<{ repository: string; baseCommit: string; baseBranch: string | null }> {
    const roots = this.deps.workspaceRoots();
    if (roots.length === 0) throw new ServiceError('conflict', 'no workspace folder is open, so there is no repository to make a worktree of');
    for (const root of roots) {
      let real: string;
      try {
        real = await realpath(root);
      } catch {
        continue;
      }
      let answer: GitResult;
      try {
        // `--` ends the revisions (a file named HEAD is no question); exit 128 when not a repository
        // (nothing printed) or when HEAD has no commit yet (the top level printed before).
        answer = await runGit(['rev-parse', '--show-toplevel', 'HEAD^{commit}', '--symbolic-full-name', 'HEAD', '--'], { cwd: real, readOnly: true, readsNoContent: true, okCodes: [128] });
      } catch (error) {
        if (error instanceof GitError && error.kind === 'missing') throw gitFailure(error, 'a worktree needs git');
        continue;
      }
      const [top, commit, head] = answer.stdout.split('\n');
      if (!top || (await realpath(top).catch(() => undefined)) !== real) continue;
      if (answer.code !== 0) {
        if (/bad revision|unknown revision/.test(answer.stderr)) throw new ServiceError('conflict', "the workspace's repository has no commit yet: a worktree is made from HEAD's commit");
        throw gitFailure(new GitError('failed', answer.stderr.trim().split('\n')[0] ?? `exit ${answer.code}`), 'the worktree could not be made', { [real]: 'the repository' });
      }
      return { repository: real, baseCommit: commit, baseBranch: head.startsWith('refs/heads/') ? head.slice('refs/heads/'.length) : null };
    }
    // The folders go to the log only: the error may be a webhook sender's to read.
    this.deps.logger.info('worktree.no_repository', { folders: roots });
    throw new ServiceError('conflict', `no workspace folder (of ${roots.length}) is the top level of a git repository: a worktree needs one`);
  }

  /** Where the repository's worktrees go: service.json `worktrees.folder`, else `<parent>/<name>.worktrees`; never inside the repository. */
  private async folderFor(repository: string): Promise<string> {
    const configured = this.deps.config().worktrees.folder;
    const folder = configured ? path.resolve(repository, configured) : path.join(path.dirname(repository), `${path.basename(repository)}.worktrees`);
    const real = await realpath(folder).catch(() => folder);
    const inside = path.relative(repository, real);
    if (inside === '' || (!inside.startsWith('..') && !path.isAbsolute(inside))) {
      throw new ServiceError('conflict', "service.json's worktrees.folder is inside the repository: a worktree must be outside the user's working tree");
    }
    return real;
  }
}

/**
 * Counts a worktree's changes (git) and stores them as its list row's; the one home of that count, for a
 * turn's end and for a land (review-handlers.ts). A failure is logged and the row keeps its last counts.
 */
export async function storeChangeStats(rows: Pick<Store['worktrees'], 'setStats'>, record: WorktreeRecord, logger: Logger): Promise<void> {
  try {
    await rows.setStats(record.conversationId, await changeStatsOf(record));
  } catch (error) {
    logger.warn('worktree.stats_failed', { conversation: record.conversationId, error: error instanceof Error ? error.message : String(error) });
  }
}

export function infoOf(record: StoredWorktree): WorktreeInfo {
  return {
    branch: record.branch,
    base_branch: record.baseBranch,
    base_commit: record.baseCommit,
    path: record.path,
    state: record.state,
    changed_files: record.changedFiles,
    base_moved: record.baseMoved,
  };
}

/** Why a turn of this worktree is refused: named by its branch, never its folder (a webhook's sender gets this text, and the machine's folders are not theirs to know). */
function refuse(record: WorktreeRecord): never {
  if (record.state === 'missing') {
    throw new ServiceError(
      'conflict',
      `this conversation's worktree folder (branch ${record.branch}) no longer exists (it was deleted outside the service); its branch is kept in the repository. Start a new conversation to go on.`,
    );
  }
  throw new ServiceError('conflict', `this conversation's worktree was ${record.state}: start a new conversation to go on`);
}

/**
 * git's failure as a clear `conflict`, its words kept but each of `places` (a folder of the machine) named
 * for what it is: a webhook's sender may read this, and the machine's folders are not theirs to know.
 */
function gitFailure(error: unknown, what: string, places: Record<string, string> = {}): Error {
  if (!(error instanceof GitError)) return error instanceof Error ? error : new Error(String(error));
  if (error.kind === 'missing') return new ServiceError('conflict', `${what}: git is not installed (or not on the PATH the service was started with)`);
  return new ServiceError('conflict', `${what}: ${withoutPlaces(error.message, places)}`);
}

/** `text` with each folder of `places` replaced by its name, the longest first (a folder inside another is named as itself). */
function withoutPlaces(text: string, places: Record<string, string>): string {
  const folders = Object.keys(places).sort((a, b) => b.length - a.length);
  return folders.reduce((named, folder) => named.split(folder).join(places[folder]), text);
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

async function isFolder(folder: string): Promise<boolean> {
  return stat(folder).then(
    (s) => s.isDirectory(),
    () => false,
  );
}
