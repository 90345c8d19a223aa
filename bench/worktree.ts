import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worktrees } from '../src/agent/worktrees/worktrees';
import { nullLogger } from '../src/log/logger';
import { ServiceConfigFile } from '../src/protocol';
import { openStore } from '../src/store';
import { fmt } from './util';

/**
 * Making a conversation's worktree (agent/worktrees, issue 24) in a repository of 10,000 files, against
 * `git worktree add -b <branch> <folder> HEAD` alone, same run, same repository: the ratio is what the
 * service adds (finding the repository, HEAD and its branch, a free name, the guards of src/git, the
 * row). Each worktree is removed (untimed) before the next; rounds alternate (ABBA). Two figures: the
 * best of each against the best of the other, and the median of the rounds' own ratios (a round's two
 * runs see the same moment of a shared machine, whose load changes from second to second).
 */
const FILES = 10_000;
const FOLDERS = 100;
const ROUNDS = 5;

const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.invalid', ...args], { cwd, stdio: 'ignore' });

async function repository(root: string): Promise<string> {
  const dir = join(root, 'repo');
  for (let d = 0; d < FOLDERS; d += 1) {
    await mkdir(join(dir, `pkg${d}`), { recursive: true });
    for (let f = 0; f < FILES / FOLDERS; f += 1) await writeFile(join(dir, `pkg${d}`, `file${f}.ts`), `export const value${f} = ${f};\n`);
  }
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'bench');
  return dir;
}

export async function benchWorktree(): Promise<Record<string, number>> {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'ra-bench-worktree-')));
  const repo = await repository(root);
  await mkdir(join(root, 'data'));
  const store = await openStore(join(root, 'data'));
  const config = ServiceConfigFile.parse({});
  const worktrees = new Worktrees({ store, config: () => config, workspaceRoots: () => [repo], logger: nullLogger });
  const best = { service: Infinity, git: Infinity };
  const ratios: number[] = [];
  let n = 0;
  const remove = (folder: string, branch: string) => {
    git(repo, 'worktree', 'remove', '--force', folder);
    git(repo, 'branch', '-D', branch);
  };
  try {
    for (let round = 0; round < ROUNDS; round += 1) {
      const took = { service: 0, git: 0 };
      for (const which of round % 2 === 0 ? (['git', 'service'] as const) : (['service', 'git'] as const)) {
        n += 1;
        const t0 = performance.now();
        if (which === 'git') {
          const folder = join(root, 'plain', `run-${n}`);
          git(repo, 'worktree', 'add', '--quiet', '-b', `plain/run-${n}`, folder, 'HEAD');
          took.git = performance.now() - t0;
          remove(folder, `plain/run-${n}`);
        } else {
          const id = `bench${String(n).padStart(3, '0')}-0000-0000-0000-000000000000`;
          const record = await worktrees.create(id, `bench run ${n}`);
          took.service = performance.now() - t0;
          remove(record.path, record.branch);
        }
      }
      best.service = Math.min(best.service, took.service);
      best.git = Math.min(best.git, took.git);
      ratios.push(took.service / took.git);
    }
  } finally {
    await store.close();
    await rm(root, { recursive: true, force: true });
  }
  const ratio = best.service / best.git;
  const median = ratios.sort((a, b) => a - b)[Math.floor(ratios.length / 2)];
  console.log(
    `creating a worktree (${FILES} files): ${fmt(best.service)} ms through the service, ${fmt(best.git)} ms for git worktree add alone (bests of ${ROUNDS}): ${fmt(ratio)}x (goal under 1.5x)`,
  );
  console.log(`median of the ${ROUNDS} rounds' own ratios: ${fmt(median)}x (rounds: ${ratios.map((r) => fmt(r)).join(', ')})`);
  return { service_ms: best.service, git_ms: best.git, ratio, median_ratio: median };
}

if (require.main === module) void benchWorktree();
