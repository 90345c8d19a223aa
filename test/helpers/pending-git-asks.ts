import { execFileSync } from 'node:child_process';
import { GitStatusCache, type GitSummary } from '../../src/agent/prompt/git-status';
import { tempDir } from './temp';

/** A new repository and a git status cache whose asks wait for the test to answer them (answers[i]: the i-th ask). */
export async function pendingGitAsks(t: { after: (fn: () => Promise<void>) => void }) {
  const { dir: repo, cleanup } = await tempDir('ra-git-asks-');
  t.after(cleanup);
  execFileSync('git', ['init', '-q', '-b', 'main', repo]);
  const answers: ((summary: GitSummary) => void)[] = [];
  const cache = new GitStatusCache(() => new Promise<GitSummary>((resolve) => answers.push(resolve)));
  return { repo, cache, answers, asked: () => answers.length };
}
