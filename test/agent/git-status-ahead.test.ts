// Git's status is asked again ahead, past half its age (issue 25: each GIT_STATUS_MAX_AGE_MS, one turn
// of a steady run waited up to a second for git): the kept answer is used meanwhile, never one older than
// GIT_STATUS_MAX_AGE_MS, and a change (a tool's, HEAD's) still asks again at once.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { GIT_STATUS_MAX_AGE_MS, type GitSummary } from '../../src/agent/prompt/git-status';
import { pendingGitAsks } from '../helpers/pending-git-asks';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const HALF = GIT_STATUS_MAX_AGE_MS / 2;

const summary = (changed: number): GitSummary => ({ branch: 'main', changed });

/** A cache whose first ask (at 0) was answered `summary(1)`. */
async function answeredAtZero(t: { after: (fn: () => Promise<void>) => void }) {
  const asks = await pendingGitAsks(t);
  const first = asks.cache.summary(asks.repo, 0);
  await sleep(20);
  asks.answers[0]!(summary(1));
  assert.deepEqual(await first, summary(1));
  return asks;
}

test('past half its age the kept answer is used and git is asked again ahead; the next turn has the new answer', async (t) => {
  const { repo, cache, answers } = await answeredAtZero(t);

  assert.deepEqual(await cache.summary(repo, HALF - 1), summary(1), 'young: kept');
  assert.equal(answers.length, 1, 'and git not asked');
  // Answered at once (git still to answer), and git asked for the turns to come.
  assert.deepEqual(await cache.summary(repo, HALF), summary(1));
  assert.equal(answers.length, 2, 'asked ahead');
  assert.deepEqual(await cache.summary(repo, HALF + 1), summary(1), 'the ask ahead is not asked twice');
  assert.equal(answers.length, 2);
  answers[1]!(summary(2));
  await sleep(0);
  // The one asked ahead (at HALF) is in force, young.
  assert.deepEqual(await cache.summary(repo, HALF + HALF / 2), summary(2));
  assert.equal(answers.length, 2);
  // Past the first answer's age, at once (no turn waits for git), and past half the second's: asked ahead again.
  assert.deepEqual(await cache.summary(repo, GIT_STATUS_MAX_AGE_MS + 1), summary(2));
  assert.equal(answers.length, 3);
  answers[2]!(summary(2));
});

test('an answer past its age is never used: a turn then waits for the ask ahead', async (t) => {
  const { repo, cache, answers } = await answeredAtZero(t);
  assert.deepEqual(await cache.summary(repo, HALF), summary(1));
  assert.equal(answers.length, 2);
  let told: GitSummary | undefined;
  const late = cache.summary(repo, GIT_STATUS_MAX_AGE_MS).then((s) => (told = s));
  await sleep(20);
  assert.equal(told, undefined, 'waits: the kept answer is too old');
  assert.equal(answers.length, 2, 'joins the ask ahead');
  answers[1]!(summary(3));
  await late;
  assert.deepEqual(told, summary(3));
});

test('a tool that changed files, or a checkout, makes the next turn ask git at once, ask ahead or not', async (t) => {
  const { repo, cache, answers } = await answeredAtZero(t);
  assert.deepEqual(await cache.summary(repo, HALF), summary(1));
  assert.equal(answers.length, 2, 'asked ahead, not answered yet');
  cache.changed();
  let told: GitSummary | undefined;
  const afterTool = cache.summary(repo, HALF + 1).then((s) => (told = s));
  await sleep(20);
  assert.equal(answers.length, 3, 'its own git: the ask ahead began before the change');
  answers[2]!(summary(5));
  await afterTool;
  assert.deepEqual(told, summary(5));
  answers[1]!(summary(4));
  await sleep(20);

  // A checkout (HEAD written) while an answer is kept: asked again, not the kept one.
  await writeFile(join(repo, '.git', 'HEAD'), 'ref: refs/heads/other\n');
  let asked = answers.length;
  for (let i = 0; i < 100 && answers.length === asked; i += 1) {
    void cache.summary(repo, HALF + 2);
    await sleep(20);
  }
  assert.equal(answers.length, asked + 1, 'the checkout is seen: git asked again');
  asked = answers.length;
  answers[asked - 1]!(summary(0));
});
