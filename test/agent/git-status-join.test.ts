// A turn asking git status while an earlier ask (the warm-up's) still runs shares its answer, unless
// HEAD or the index changed since that ask began (found in review: a checkout during the warm-up's git
// gave the next turn the old branch).
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { GitSummary } from '../../src/agent/prompt/git-status';
import { pendingGitAsks } from '../helpers/pending-git-asks';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('a turn asking after a checkout does not join the ask started before it', async (t) => {
  const { repo, cache, answers, asked } = await pendingGitAsks(t);
  const warm = cache.summary(repo);
  await sleep(50);
  await writeFile(join(repo, '.git', 'HEAD'), 'ref: refs/heads/other\n');
  for (let i = 0; i < 100 && asked() < 2; i += 1) {
    void cache.summary(repo);
    await sleep(20);
    if (asked() >= 2) break;
  }
  assert.equal(asked(), 2, 'the ask after the checkout ran its own git');
  for (const answer of answers) answer({ branch: 'x' } as GitSummary);
  await warm;
});

test('a turn asking while the same state is being asked shares that one git', async (t) => {
  const { repo, cache, answers, asked } = await pendingGitAsks(t);
  const warm = cache.summary(repo);
  await sleep(50);
  const turn = cache.summary(repo);
  await sleep(50);
  assert.equal(asked(), 1);
  answers[0]!({ branch: 'main' } as GitSummary);
  assert.deepEqual(await turn, await warm);
});
