import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readdir, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { branchNameOf, slugOf } from '../../src/agent/worktrees/names';
import { Worktrees, worktreeByDefault, worktreeRequired } from '../../src/agent/worktrees/worktrees';
import { nullLogger } from '../../src/log/logger';
import { ServiceConfigFile, ServiceError, type ServiceConfig } from '../../src/protocol';
import { openStore, type Store } from '../../src/store';
import { git, gitRepository } from '../helpers/git-repo';
import { tempDir } from '../helpers/temp';
import { sourceOf } from '../../src/protocol/sources';

// The worktrees of issue 24 made directly (agent/worktrees): names, taken names, and the repositories
// a worktree cannot be made of. The service's own path is test/service/worktrees.test.ts.

describe('branch names', () => {
  test('a slug of the title, at most 30 characters of lower-case letters, digits and -', () => {
    assert.equal(slugOf('Fix the login bug, please!'), 'fix-the-login-bug-please');
    assert.equal(slugOf('Ünïcödé  tïtle'), 'unicode-title');
    assert.equal(slugOf('a'.repeat(40)).length, 30);
    assert.equal(slugOf('this title is quite a bit longer than thirty'), 'this-title-is-quite-a-bit-long');
    assert.equal(slugOf('!!!'), 'run');
    assert.equal(slugOf('../../etc/passwd'), 'etc-passwd');
  });

  test('assistant/<slug>-<8 characters of the id>, then -2, -3', () => {
    const id = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
    assert.equal(branchNameOf('Add tests', id), 'assistant/add-tests-0f1e2d3c');
    assert.equal(branchNameOf('Add tests', id, 2), 'assistant/add-tests-0f1e2d3c-2');
  });
});

describe('choosing a worktree by source', () => {
  const config = ServiceConfigFile.parse({
    worktrees: { default: { relay: true } },
    channels: {
      webhook: {
        accounts: { ci: { incoming_path: '/ci', outgoing_url: 'https://example.invalid/cb', worktree: 'required' }, chat: { incoming_path: '/chat', outgoing_url: 'https://example.invalid/cb' } },
      },
    },
  });
  test('service.json worktrees.default per source; a webhook account may require one', () => {
    assert.equal(worktreeByDefault(config, sourceOf('relay')), true);
    assert.equal(worktreeByDefault(config, sourceOf('editor')), false);
    assert.equal(worktreeByDefault(config, sourceOf('ws')), false);
    assert.equal(worktreeByDefault(config, sourceOf('webhook:ci')), true);
    assert.equal(worktreeByDefault(config, sourceOf('webhook:chat')), false);
    assert.equal(worktreeRequired(config, sourceOf('webhook:ci')), true);
    assert.equal(worktreeRequired(config, sourceOf('relay')), false);
  });
  test('defaults are all off: behaviour unchanged unless asked', () => {
    const plain = ServiceConfigFile.parse({});
    for (const source of ['editor', 'ws', 'relay', 'webhook:x']) assert.equal(worktreeByDefault(plain, sourceOf(source)), false);
  });
  test('a bad worktrees setting is named', () => {
    const bad = ServiceConfigFile.safeParse({ worktrees: { default: { phone: true } } });
    assert.equal(bad.success, false);
    assert.match(JSON.stringify(bad.error?.issues), /phone/);
  });
  test('allow_hooks is a setting of its own: true or false (default false), anything else named', () => {
    assert.equal(ServiceConfigFile.parse({}).worktrees.allow_hooks, false);
    assert.equal(ServiceConfigFile.parse({ worktrees: { allow_hooks: true } }).worktrees.allow_hooks, true);
    const bad = ServiceConfigFile.safeParse({ worktrees: { allow_hooks: 'yes' } });
    assert.equal(bad.success, false);
    assert.deepEqual(bad.error?.issues[0]?.path, ['worktrees', 'allow_hooks']);
    assert.match(String(bad.error?.issues[0]?.message), /allow_hooks must be true or false/);
  });
});

describe('making worktrees', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let store: Store;
  let config: ServiceConfig;
  let roots: string[];
  const worktrees = () => new Worktrees({ store, config: () => config, workspaceRoots: () => roots, logger: nullLogger });

  before(async () => {
    ({ dir, cleanup } = await tempDir('ra-worktrees-unit-'));
    dir = await realpath(dir);
    await mkdir(join(dir, 'data'));
    store = await openStore(join(dir, 'data'));
    config = ServiceConfigFile.parse({});
  });
  after(async () => {
    await store?.close();
    await cleanup?.();
  });

  const conflict = async (work: Promise<unknown>, message: RegExp) => {
    const error = await work.then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof ServiceError, String(error));
    assert.equal(error.code, 'conflict');
    assert.match(error.message, message);
  };

  test('a taken branch name (and a taken folder) gets the next suffix', async () => {
    const repo = join(dir, 'taken');
    await gitRepository(repo, { 'a.txt': 'a\n' });
    roots = [repo];
    const id = 'aaaaaaaa-0000-0000-0000-000000000001';
    git(repo, 'branch', branchNameOf('Same title', id));
    await mkdir(join(dir, 'taken.worktrees', 'same-title-aaaaaaaa-2'), { recursive: true });
    const record = await worktrees().create(id, 'Same title');
    assert.equal(record.branch, 'assistant/same-title-aaaaaaaa-3');
    assert.equal(record.path, join(dir, 'taken.worktrees', 'same-title-aaaaaaaa-3'));
    assert.deepEqual(store.worktrees.worktreeOf(id), { ...record, changedFiles: 0, baseMoved: false });
  });

  test("the first workspace folder that is a repository's top level is used; a sub-folder of one is not", async () => {
    const repo = join(dir, 'second');
    await gitRepository(repo, { 'src/a.txt': 'a\n' });
    const plain = join(dir, 'plain');
    await mkdir(plain);
    roots = [plain, join(repo, 'src'), repo];
    const record = await worktrees().create('bbbbbbbb-0000-0000-0000-000000000001', 'which repo');
    assert.equal(record.repository, repo);
    roots = [plain, join(repo, 'src')];
    await conflict(worktrees().create('bbbbbbbb-0000-0000-0000-000000000002', 'no top level'), /no workspace folder \(of 2\) is the top level of a git repository/);
  });

  test('a repository without a commit, and worktrees.folder inside the repository, are refused; nothing is made', async () => {
    const empty = join(dir, 'empty');
    await mkdir(empty);
    git(empty, 'init', '-q', '-b', 'main');
    roots = [empty];
    await conflict(worktrees().create('cccccccc-0000-0000-0000-000000000001', 'nothing yet'), /no commit yet/);
    assert.equal(existsSync(join(dir, 'empty.worktrees')), false);

    const repo = join(dir, 'inside');
    await gitRepository(repo, { 'a.txt': 'a\n' });
    roots = [repo];
    config = ServiceConfigFile.parse({ worktrees: { folder: join(repo, 'runs') } });
    try {
      await conflict(worktrees().create('cccccccc-0000-0000-0000-000000000002', 'inside'), /inside the repository/);
      assert.equal(existsSync(join(repo, 'runs')), false);
      assert.equal(git(repo, 'branch', '--list', 'assistant/*'), '');
    } finally {
      config = ServiceConfigFile.parse({});
    }
  });

  test("a repository with a submodule: the worktree is made, the submodule's folder left empty (not fetched)", async () => {
    const library = join(dir, 'library');
    await gitRepository(library, { 'lib.txt': 'lib\n' });
    const repo = join(dir, 'with-submodule');
    await gitRepository(repo, { 'a.txt': 'a\n' });
    git(repo, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', library, 'vendor/library');
    git(repo, 'commit', '-q', '-m', 'submodule');
    roots = [repo];
    const record = await worktrees().create('dddddddd-0000-0000-0000-000000000001', 'submodules');
    assert.ok(existsSync(join(record.path, 'a.txt')));
    assert.deepEqual(await readdir(join(record.path, 'vendor', 'library')), []);
    assert.equal(git(repo, 'status', '--porcelain'), '');
  });

  test('counts at a turn end: changed files (committed, uncommitted, untracked) and whether the base moved', async () => {
    const repo = join(dir, 'counts');
    await gitRepository(repo, { 'a.txt': 'a\n', 'b.txt': 'b\n' });
    roots = [repo];
    const made = worktrees();
    const record = await made.create('eeeeeeee-0000-0000-0000-000000000001', 'counts');
    await writeFile(join(record.path, 'a.txt'), 'changed\n');
    git(record.path, 'commit', '-q', '-am', 'on the branch');
    await writeFile(join(record.path, 'b.txt'), 'uncommitted\n');
    await writeFile(join(record.path, 'new.txt'), 'untracked\n');
    await made.refreshStats(record.conversationId);
    assert.equal(made.info(record.conversationId)?.changed_files, 3);
    assert.equal(made.info(record.conversationId)?.base_moved, false);
    await writeFile(join(repo, 'c.txt'), 'c\n');
    git(repo, 'add', 'c.txt');
    git(repo, 'commit', '-q', '-m', 'the person moves on');
    await made.refreshStats(record.conversationId);
    assert.equal(made.info(record.conversationId)?.base_moved, true);
  });

  test("the start's clean-up removes only worktrees made before it: a chat's new worktree, whose conversation is stored after it, is not an orphan", async () => {
    // Review of s12/start12: the clean-up now runs 100 ms after the open, when chats that waited for it
    // are answered; a new conversation's worktree row is written before its conversation row, and the
    // clean-up removed that worktree, branch and row (later turns then wrote into the person's repository).
    const repo = join(dir, 'tidy');
    await gitRepository(repo, { 'a.txt': 'a\n' });
    roots = [repo];
    const startedAt = new Date().toISOString();
    const id = 'abababab-0000-0000-0000-000000000001';
    const made = await worktrees().create(id, 'a chat of this run', new Date(Date.parse(startedAt) + 1));
    await worktrees().removeOrphans(startedAt);
    assert.equal(existsSync(made.path), true, 'its folder is kept');
    assert.ok(store.worktrees.worktreeOf(id), 'its row is kept');
    // One left by an earlier run (its conversation deleted since) is removed.
    await worktrees().removeOrphans(new Date(Date.parse(startedAt) + 1000).toISOString());
    assert.equal(existsSync(made.path), false, "an earlier run's orphan is removed");
    assert.equal(store.worktrees.worktreeOf(id), undefined);
  });
});
