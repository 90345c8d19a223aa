// get_changes (issue 24, "Review and land") on a 10,000-file repository whose worktree has 500 changed
// files (300 edited, 100 edited and committed, 100 new and untracked), against `git diff --stat <base>`
// alone in the same worktree, in the same run: the ratio is the figure (goal under 1.5x). git diff --stat
// does not list untracked files nor hand back hunks; get_changes does both, so that ratio is an upper
// bound of what our own work (the untracked files, the reader, the ids, the other reads) adds. A second
// row is against `git diff <base>` (the whole patch, which get_changes has to read): the fairer one.
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { changesOf } from '../src/git/changes';
import type { WorktreeRecord } from '../src/protocol/worktrees';
import { fmt } from './util';
import { tempDir } from '../test/helpers/temp';

const run = promisify(execFile);
const FILES = 10_000;
const ROUNDS = 11;

const git = (cwd: string, ...args: string[]) => run('git', ['-C', cwd, ...args], { maxBuffer: 256 * 1024 * 1024 });
const body = (i: number, tag = '') => Array.from({ length: 30 }, (_, line) => `export const v${i}_${line} = ${line}${line === 15 ? tag : ''};`).join('\n') + '\n';
const fileOf = (i: number) => `src/d${Math.floor(i / 100)}/f${i}.ts`;

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

export async function benchChanges(): Promise<void> {
  const temp = await tempDir('ra-bench-changes-');
  try {
    const repo = join(temp.dir, 'repo');
    for (let d = 0; d < FILES / 100; d++) await mkdir(join(repo, 'src', `d${d}`), { recursive: true });
    for (let i = 0; i < FILES; i++) await writeFile(join(repo, fileOf(i)), body(i));
    const identity = ['-c', 'user.name=Bench', '-c', 'user.email=bench@example.com'];
    await git(repo, 'init', '-q', '-b', 'main');
    await git(repo, 'add', '-A');
    await git(repo, ...identity, 'commit', '-q', '-m', 'base');
    const baseCommit = (await git(repo, 'rev-parse', 'HEAD')).stdout.trim();
    const path = join(temp.dir, 'worktree');
    await git(repo, 'worktree', 'add', '-q', '-b', 'assistant/bench-1', path, baseCommit);
    for (let i = 0; i < 100; i++) await writeFile(join(path, fileOf(i * 20)), body(i * 20, ' + 1'));
    await git(path, ...identity, 'commit', '-q', '-am', 'committed part');
    for (let i = 0; i < 300; i++) await writeFile(join(path, fileOf(2000 + i * 20)), body(2000 + i * 20, ' * 2'));
    for (let i = 0; i < 100; i++) await writeFile(join(path, 'src', `new${i}.ts`), body(FILES + i));
    const worktree: WorktreeRecord = {
      conversationId: 'bench',
      repository: repo,
      path,
      branch: 'assistant/bench-1',
      baseBranch: 'main',
      baseCommit,
      state: 'active',
      createdAt: new Date().toISOString(),
    };

    const first = await changesOf(worktree);
    const hunks = first.files.reduce((n, f) => n + f.hunks.length, 0);
    console.log(`repository: ${FILES} files; worktree: ${first.files.length} changed files (${first.commits} commit, ${first.uncommitted_files} uncommitted), ${hunks} hunks`);
    // Interleaved round by round, so both see the same machine (its load here changes from second to
    // second): the figure is the median of each round's ratio.
    const rounds: { stat: number; patch: number; ours: number }[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const stat = await timed(() => git(path, 'diff', '--stat', baseCommit));
      const ours = await timed(() => changesOf(worktree));
      const patch = await timed(() => git(path, 'diff', baseCommit));
      rounds.push({ stat, patch, ours });
    }
    const mid = <T>(values: T[], key: (v: T) => number) => values.map(key).sort((a, b) => a - b)[Math.floor(values.length / 2)];
    console.log(
      `git diff --stat alone: ${fmt(
        mid(rounds, (r) => r.stat),
        1,
      )} ms, git diff alone: ${fmt(
        mid(rounds, (r) => r.patch),
        1,
      )} ms, get_changes: ${fmt(
        mid(rounds, (r) => r.ours),
        1,
      )} ms (medians of ${ROUNDS})`,
    );
    console.log(`get_changes / git diff --stat: ${fmt(mid(rounds, (r) => r.ours / r.stat))}x (median of the rounds' ratios; goal under 1.5x)`);
    console.log(`get_changes / git diff (the whole patch): ${fmt(mid(rounds, (r) => r.ours / r.patch))}x (median of the rounds' ratios)`);
  } finally {
    await temp.cleanup();
  }
}

if (process.argv[1]?.endsWith('changes.ts')) {
  benchChanges().then(
    () => process.exit(0),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
