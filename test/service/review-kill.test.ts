// Issue 24, "What goes wrong": kill -9 of the service while commit_changes or land_changes runs. The real
// CLI in a child, a real repository, and a `git` on the child's PATH that stops the service's git at a
// chosen step (test/helpers/git-stopper.ts) so the kill lands at each step boundary in turn, never by a
// sleep race; `during` leaves the lock file a git killed in the middle leaves. After each kill the
// service is started again over the same data and repository and must: have lost no commit, leave the
// person's branch and working tree either as they were or fully landed, answer a stray lock clearly
// (naming it; it never deletes one: it cannot tell it from the person's own git at work), serve the
// conversation, and finish the commit or land when asked again. Runs after `npm run build`.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { serve, type ServeProcess } from '../helpers/cli';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { git, gitRepository, isolateGitConfig } from '../helpers/git-repo';
import { GitStopper } from '../helpers/git-stopper';
import { TEST_TOKEN, writeConfig } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

type Frame = Record<string, unknown>;
type Mode = 'before' | 'after' | 'during';

let isolation: Awaited<ReturnType<typeof isolateGitConfig>>;
let fake: FakeOpenAI;
let root: string;
let cleanup: () => Promise<void>;
let repo: string;
let dataDir: string;
let stopper: GitStopper;
let proc: ServeProcess | undefined;
let client: TestClient | undefined;

before(async () => {
  isolation = await isolateGitConfig();
  fake = await startFakeOpenAI();
  ({ dir: root, cleanup } = await tempDir('ra-review-kill-'));
  root = await realpath(root);
  repo = join(root, 'repo');
  await gitRepository(repo, { 'app.ts': 'v0\n' });
  dataDir = join(root, 'data');
  await mkdir(dataDir);
  await writeConfig(dataDir, { provider: 'openai', model: 'gpt-4o-mini', base_url: fake.url, workspace: repo, permission_mode: 'allow' });
  stopper = await GitStopper.create(join(root, 'stopper'));
  await start();
});
after(async () => {
  client?.close();
  proc?.child.kill('SIGKILL');
  await proc?.exited;
  await fake?.close();
  await cleanup?.();
  await isolation?.cleanup();
});

async function start(): Promise<void> {
  proc = await serve(dataDir, 0, { PATH: stopper.path });
  client = await TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, TEST_TOKEN);
}

async function ok(frame: Frame): Promise<Frame> {
  const reply = await client!.request(frame, 60_000);
  assert.equal(reply.status, 'ok', JSON.stringify(reply).slice(0, 600));
  return reply.data as Frame;
}

/** A turn of the fake model writing `path` in the conversation (a new one in its own worktree when `id` is absent). */
async function write(path: string, content: string, id?: string): Promise<{ id: string; worktree: string; branch: string }> {
  fake.script({ tool_calls: [{ name: 'write_file', arguments: { path, content } }] }, { text: 'written' });
  const data = await ok({ type: 'chat', message: `write ${path}`, ...(id ? { conversation_id: id } : { worktree: true }) });
  const conversationId = data.conversation_id as string;
  const changes = await ok({ type: 'get_changes', conversation_id: conversationId });
  const worktree = changes.worktree as { path: string; branch: string };
  return { id: conversationId, worktree: worktree.path, branch: worktree.branch };
}

/** Sends `frame`, stops the service's git at `step` (`mode`), kills the service with SIGKILL there, and starts it again. */
async function killAt(step: number, mode: Mode, frame: Frame): Promise<void> {
  await stopper.arm(step, mode);
  client!.send({ id: 'killed', ...frame });
  const pid = await stopper.stopped();
  proc!.child.kill('SIGKILL');
  await proc!.exited;
  client!.close();
  await stopper.release(pid);
  await start();
}

/** The gits a command runs, logged by the stopper without stopping (a first, whole run). */
async function stepsOf(frame: Frame): Promise<string[]> {
  await stopper.arm(Infinity, 'after');
  await ok(frame);
  const steps = await stopper.log();
  await stopper.release();
  return steps;
}

/** The conversation's worktree is shown `landed` (the check at start runs in the background). */
async function landedSeen(id: string, where: string): Promise<void> {
  await waitFor(async () => ((await ok({ type: 'get_changes', conversation_id: id })).worktree as { state: string }).state === 'landed', `${where}: the worktree seen as landed at start`, 30_000, 200);
}

const commits = (branch: string) => Number(git(repo, 'rev-list', '--count', `main..${branch}`).trim());
const status = () => git(repo, 'status', '--porcelain=v1', '--untracked-files=all');
const lastStep = (steps: string[], pattern: RegExp) => steps.findIndex((s) => pattern.test(s)) + 1;

/** A clear answer naming the lock, nothing changed; then the person (who knows no git runs) deletes it. */
async function lockAnswered(frame: Frame, lock: string): Promise<void> {
  assert.equal(existsSync(lock), true, `the killed git's lock ${lock} is there`);
  const reply = await client!.request(frame, 60_000);
  assert.equal(reply.status, 'error', JSON.stringify(reply));
  assert.equal(reply.code, 'conflict');
  assert.ok(String(reply.error).includes(lock), String(reply.error));
  assert.match(String(reply.error), /another git is running there, or one was stopped in the middle/);
  await rm(lock);
}

test('kill -9 at each step boundary of commit_changes: no commit lost, the branch gets exactly the one commit, a stray lock is named', async () => {
  const first = await write('app.ts', 'v1\n');
  const headBefore = git(repo, 'rev-parse', 'HEAD');
  const mine = status();
  const steps = await stepsOf({ type: 'commit_changes', conversation_id: first.id, message: 'first' });
  const commitStep = lastStep(steps, / commit -q /);
  const addStep = lastStep(steps, / add -A /);
  assert.ok(commitStep > addStep && addStep > 0, steps.join('\n'));
  // Every boundary where what is on disk differs (the steps between are reads): nothing done yet, staged,
  // committed (its answer lost); and a git killed inside the staging and inside the commit.
  const cases: [number, Mode][] = [
    [addStep, 'before'],
    [addStep, 'after'],
    [commitStep, 'after'],
    [addStep, 'during'],
    [commitStep, 'during'],
  ];
  let expected = 1;
  for (const [step, mode] of cases) {
    const version = `v${step}-${mode}\n`;
    await write('app.ts', version, first.id);
    const frame = { type: 'commit_changes', conversation_id: first.id, message: `commit ${version.trim()}` };
    await killAt(step, mode, frame);
    const where = `killed ${mode} step ${step} (${steps[step - 1]?.slice(0, 80)})`;
    // No commit lost, none made twice; the person's tree untouched; the worktree holds the change.
    const made = commits(first.branch);
    assert.ok(made === expected || made === expected + 1, `${where}: ${made} commits`);
    assert.equal(await readFile(join(first.worktree, 'app.ts'), 'utf8'), version, where);
    assert.equal(git(repo, 'rev-parse', 'HEAD'), headBefore, where);
    assert.equal(status(), mine, where);
    // The restarted service serves the conversation and its changes.
    assert.equal(((await ok({ type: 'get_changes', conversation_id: first.id })).files as unknown[]).length, 1, where);
    if (mode === 'during') await lockAnswered(frame, git(first.worktree, 'rev-parse', '--path-format=absolute', '--git-path', 'index.lock').trim());
    // Asked again: committed now, or it was committed before the kill (nothing left to commit).
    const again = await client!.request(frame, 60_000);
    if (made === expected) assert.equal(again.status, 'ok', `${where}: ${JSON.stringify(again)}`);
    else assert.match(String(again.error), /nothing to commit/, where);
    expected += 1;
    assert.equal(commits(first.branch), expected, where);
    assert.equal(git(repo, 'show', `${first.branch}:app.ts`), version, where);
  }
});

test('kill -9 at each step boundary of land_changes: the branch is unchanged or fully landed, never half merged; a stray lock is named', async () => {
  const untracked = join(repo, 'my-notes.txt');
  await writeFile(untracked, "the person's own, untracked\n");
  const dry = await write('dry.txt', 'dry\n');
  await ok({ type: 'commit_changes', conversation_id: dry.id, message: 'dry' });
  const steps = await stepsOf({ type: 'land_changes', conversation_id: dry.id, method: 'merge' });
  const ffStep = lastStep(steps, / merge --ff-only /);
  const commitTreeStep = lastStep(steps, / commit-tree /);
  const statusStep = lastStep(steps, / status --porcelain/);
  assert.ok(ffStep > commitTreeStep && commitTreeStep > statusStep && statusStep > 0, steps.join('\n'));
  // Every boundary where what is on disk differs (the other steps are reads): checks done, the merge
  // commit written (an object nothing points at), the fast-forward not yet run, run (its answer lost),
  // and a git killed inside the fast-forward.
  const cases: [number, Mode][] = [
    [statusStep, 'after'],
    [commitTreeStep, 'after'],
    [ffStep, 'before'],
    [ffStep, 'after'],
    [ffStep, 'during'],
  ];
  for (const [step, mode] of cases) {
    const file = `f${step}-${mode}.txt`;
    const run = await write(file, `${file}\n`);
    await ok({ type: 'commit_changes', conversation_id: run.id, message: `add ${file}` });
    const head = git(repo, 'rev-parse', 'HEAD').trim();
    const mine = status();
    const frame = { type: 'land_changes', conversation_id: run.id, method: 'merge' };
    await killAt(step, mode, frame);
    const where = `killed ${mode} step ${step} (${steps[step - 1]?.slice(0, 80)})`;
    // Unchanged, or landed whole: HEAD is the old one or a merge holding the branch; the status as before.
    const now = git(repo, 'rev-parse', 'HEAD').trim();
    const landed = now !== head;
    if (landed) {
      assert.equal(git(repo, 'rev-parse', `${now}^1`).trim(), head, where);
      assert.equal(git(repo, 'merge-base', '--is-ancestor', run.branch, now), '', where);
    }
    assert.equal(existsSync(join(repo, file)), landed, where);
    assert.equal(existsSync(join(repo, '.git', 'MERGE_HEAD')), false, `${where}: no merge left half done`);
    assert.equal(status(), mine, where);
    assert.equal(await readFile(untracked, 'utf8'), "the person's own, untracked\n", where);
    // Landed before the kill: the restarted service sees the branch in the base and says so.
    if (landed) await landedSeen(run.id, where);
    // The restarted service serves the conversation.
    assert.equal(((await ok({ type: 'get_messages', conversation_id: run.id })).messages as unknown[]).length > 0, true, where);
    if (mode === 'during') await lockAnswered(frame, join(repo, '.git', 'index.lock'));
    const again = (await ok(frame)) as { landed: boolean; blocked: { reason: string } | null };
    if (landed) assert.equal(again.blocked?.reason, 'nothing_to_land', where);
    else assert.equal(again.landed, true, `${where}: ${JSON.stringify(again)}`);
    assert.equal(await readFile(join(repo, file), 'utf8'), `${file}\n`, where);
    assert.equal(status(), mine, where);
  }
});

test('kill -9 right after a squash land moved the branch: at start the worktree is seen as landed (its commits are copies, not ancestors); one with work not in the base stays active', async () => {
  const dry = await write('dry-squash.txt', 'dry\n');
  await ok({ type: 'commit_changes', conversation_id: dry.id, message: 'dry' });
  const steps = await stepsOf({ type: 'land_changes', conversation_id: dry.id, method: 'squash' });
  const ffStep = lastStep(steps, / merge --ff-only /);
  assert.ok(ffStep > 0, steps.join('\n'));
  const open = await write('open.txt', 'open\n');
  await ok({ type: 'commit_changes', conversation_id: open.id, message: 'open work' });
  const run = await write('squashed.txt', 'squashed\n');
  await ok({ type: 'commit_changes', conversation_id: run.id, message: 'add squashed.txt' });
  const head = git(repo, 'rev-parse', 'HEAD').trim();
  await killAt(ffStep, 'after', { type: 'land_changes', conversation_id: run.id, method: 'squash' });
  assert.notEqual(git(repo, 'rev-parse', 'HEAD').trim(), head, 'the fast-forward ran');
  assert.equal(git(repo, 'rev-list', '--count', `${head}..HEAD`).trim(), '1', 'one squashed commit, not the branch');
  await landedSeen(run.id, 'squash killed after its fast-forward');
  // Every worktree was looked at before any row was written (Worktrees.markLanded).
  assert.equal(((await ok({ type: 'get_changes', conversation_id: open.id })).worktree as { state: string }).state, 'active');
});
