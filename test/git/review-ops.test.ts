import assert from 'node:assert/strict';
import childProcess from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { chmod, mkdir, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { changesOf } from '../../src/git/changes';
import { gitStarter } from '../../src/git/git-starter';
import { commitChanges } from '../../src/git/commit';
import { compareUrlOf } from '../../src/git/compare-url';
import { gitIn } from '../../src/git/git-in';
import { landChanges } from '../../src/git/land';
import { refuseRawLfsFiles } from '../../src/git/lfs';
import { configEntries, discardWorktree, isLocalRemote, personalConfigFiles, pinnedTransport, pushChanges, trackingRefOf, unlandedWork } from '../../src/git/push';
import { revertChanges } from '../../src/git/revert';
import { ServiceError } from '../../src/protocol/errors';
import { addWorktree, git, gitRepository, isolateGitConfig, makeRepo, snapshot, writeFiles, type TestRepo } from '../helpers/git-repo';
import { selfSignedCertificate } from '../helpers/self-signed';

const lines = (n: number, tag = '') => Array.from({ length: n }, (_, i) => `line ${i + 1}${tag}`).join('\n') + '\n';
const noHooks = { allowHooks: false };

/** git-lfs is on this machine (`git lfs version` answers): a test of the pointers it writes runs only then. */
function hasGitLfs(): boolean {
  try {
    childProcess.execFileSync('git', ['lfs', 'version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

let isolation: Awaited<ReturnType<typeof isolateGitConfig>>;
before(async () => {
  isolation = await isolateGitConfig();
});
after(() => isolation.cleanup());

async function withRepo(files: Record<string, string | Buffer>, body: (repo: TestRepo) => Promise<void>): Promise<void> {
  const repo = await makeRepo(files);
  try {
    await body(repo);
  } finally {
    await repo.cleanup();
  }
}

/** The git processes the service's runner starts while `body` runs (run-git.ts starts each through gitStarter), as their arguments. */
async function gitRuns(body: () => Promise<unknown>): Promise<string[][]> {
  const start = gitStarter.start;
  const runs: string[][] = [];
  gitStarter.start = (request, handlers) => {
    runs.push([...request.args]);
    return start(request, handlers);
  };
  try {
    await body();
  } finally {
    gitStarter.start = start;
  }
  return runs;
}

/** pushChanges' answer (or error) when `write` changes the repository's config at the moment the push's git starts (after every check). */
async function pushWithConfigChanged(wt: Parameters<typeof pushChanges>[0], remote: string, write: () => void): Promise<unknown> {
  const start = gitStarter.start;
  gitStarter.start = (request, handlers) => {
    if (request.args.includes('push')) write();
    return start(request, handlers);
  };
  return pushChanges(wt, remote, noHooks)
    .then(
      () => undefined,
      (error: unknown) => error,
    )
    .finally(() => (gitStarter.start = start));
}

/** An http forge that asks for a password (401) and a proxy that counts the connections it is given, on loopback. */
async function forgeAndProxy(): Promise<{ url: string; proxyUrl: string; proxied: () => number; close: () => Promise<void> }> {
  let proxied = 0;
  const proxy = createNetServer((socket) => {
    proxied++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const server = createServer((_request, response) => response.writeHead(401, { 'WWW-Authenticate': 'Basic realm="x"' }).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/x.git`,
    proxyUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    proxied: () => proxied,
    close: async () => {
      await new Promise((resolve) => proxy.close(resolve));
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A bare repository at `bare` whose pre-receive hook, were it run, would make `marker`. */
/**
 * Someone else's HTTPS server posing as the person's forge (forge.example), with a certificate of its own
 * making in `certs`: records every credential sent to it and asks for one (401).
 */
async function credentialRecordingForge(certs: string): Promise<{ port: number; certFile: string; heard: string[]; close: () => Promise<void> }> {
  await mkdir(certs);
  const { key, cert, certFile } = selfSignedCertificate(certs, 'forge.example');
  const heard: string[] = [];
  const server = createHttpsServer({ key, cert }, (request, response) => {
    if (request.headers.authorization) heard.push(request.headers.authorization);
    response.writeHead(401, { 'WWW-Authenticate': 'Basic realm="forge"' }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { port, certFile, heard, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function bareWithHook(cwd: string, bare: string, marker: string): Promise<void> {
  git(cwd, 'init', '-q', '--bare', bare);
  await writeFiles(bare, { 'hooks/pre-receive': `#!/bin/sh\ntouch '${marker}'\n` });
  await chmod(join(bare, 'hooks', 'pre-receive'), 0o755);
}

/** A bare repository beside `repo` as its remote `origin`, and a worktree `id` with one change committed to push. */
async function originAndWork(repo: TestRepo, id: string): Promise<{ bare: string; wt: ReturnType<typeof addWorktree>; commit: string }> {
  const bare = join(repo.worktrees, '..', 'remote.git');
  git(repo.repo, 'init', '-q', '--bare', bare);
  git(repo.repo, 'remote', 'add', 'origin', bare);
  const wt = addWorktree(repo, id);
  await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
  const { commit } = await commitChanges(wt, 'to push', noHooks);
  return { bare, wt, commit };
}

/** Starts a push of `wt` to origin in a child process and kills it (-9) as its git push would start; answers the temporary folder it left. */
async function pushKilledMidway(wt: Parameters<typeof pushChanges>[0]): Promise<string> {
  const child = childProcess.spawn(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'helpers', 'push-child.ts'), JSON.stringify(wt)], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const repository = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(out.split('\n')[0]);
      });
      child.once('exit', (code) => reject(new Error(`the pushing child ended first (${code})`)));
    });
    return dirname(repository);
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

describe('get_changes', () => {
  test('lists committed and uncommitted changes against base, untracked files included, with +/- counts and hunks', async () => {
    await withRepo({ 'app.ts': lines(40), 'old.txt': 'keep me\n', 'gone.txt': 'bye\n', 'img.bin': Buffer.from([0, 1, 2, 3]) }, async (repo) => {
      const wt = addWorktree(repo, 'c1');
      await writeFiles(wt.path, { 'app.ts': lines(40).replace('line 2\n', 'line 2 changed\n').replace('line 35\n', 'line 35 changed\nextra\n') });
      git(wt.path, 'commit', '-q', '-am', 'edit app');
      await writeFiles(wt.path, { 'new dir/sp ace "q".txt': 'hello\n', 'img.bin': Buffer.from([0, 9, 9, 9]) });
      git(wt.path, 'mv', 'old.txt', 'renamed.txt');
      await rm(join(wt.path, 'gone.txt'));
      const statusBefore = git(wt.path, 'status', '--porcelain=v1');

      const changes = await changesOf(wt);
      const byPath = new Map(changes.files.map((f) => [f.path, f]));
      assert.deepEqual([...byPath.keys()].sort(), ['app.ts', 'gone.txt', 'img.bin', 'new dir/sp ace "q".txt', 'renamed.txt']);
      const app = byPath.get('app.ts')!;
      assert.equal(app.status, 'modified');
      assert.equal(app.hunks.length, 2);
      assert.deepEqual([app.additions, app.deletions], [3, 2]);
      assert.ok(app.hunks[1].lines.includes('+extra'));
      assert.equal(byPath.get('new dir/sp ace "q".txt')!.status, 'added');
      assert.deepEqual(byPath.get('new dir/sp ace "q".txt')!.hunks[0].lines, ['+hello']);
      assert.equal(byPath.get('gone.txt')!.status, 'deleted');
      assert.equal(byPath.get('renamed.txt')!.status, 'renamed');
      assert.equal(byPath.get('renamed.txt')!.old_path, 'old.txt');
      const bin = byPath.get('img.bin')!;
      assert.deepEqual([bin.binary, bin.hunks.length], [true, 0]);
      assert.equal(changes.commits, 1);
      assert.equal(changes.uncommitted_files, 4);
      assert.equal(changes.worktree.changed_files, 5);
      assert.equal(changes.worktree.base_moved, false);
      // The worktree's own index was not written: the new file is still untracked there.
      assert.equal(git(wt.path, 'status', '--porcelain=v1'), statusBefore);

      // Ids are stable: the same hunk, listed again after another hunk of the file went, keeps its id.
      const again = await changesOf(wt);
      assert.deepEqual(
        again.files.find((f) => f.path === 'app.ts')!.hunks.map((h) => h.id),
        app.hunks.map((h) => h.id),
      );
      await revertChanges(wt, 'app.ts', app.hunks[0].id);
      const after = await changesOf(wt);
      assert.deepEqual(
        after.files.find((f) => f.path === 'app.ts')!.hunks.map((h) => h.id),
        [app.hunks[1].id],
      );
    });
  });

  test('uncommitted_files compares with HEAD: a committed change the worktree put back as in base counts, a committed one left alone does not', async () => {
    await withRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' }, async (repo) => {
      const wt = addWorktree(repo, 'u1');
      await writeFiles(wt.path, { 'a.txt': 'a2\n', 'b.txt': 'b2\n' });
      git(wt.path, 'commit', '-q', '-am', 'two');
      await writeFiles(wt.path, { 'a.txt': 'a\n', 'c.txt': 'c2\n', 'd.txt': 'd\n' });
      const changes = await changesOf(wt);
      assert.deepEqual(changes.files.map((f) => f.path).sort(), ['b.txt', 'c.txt', 'd.txt']);
      // a.txt (back as in base, unlike HEAD), c.txt (edited), d.txt (new): b.txt is as committed.
      assert.equal(changes.uncommitted_files, 3);
      assert.equal(changes.uncommitted_files, git(wt.path, 'status', '--porcelain').trim().split('\n').length);
    });
  });

  test('attack: an untracked symlink to a file outside shows its target name, never the file; nothing under a symlinked folder is read', async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const secret = join(repo.worktrees, '..', 'secret.txt');
      await writeFile(secret, 'TOP SECRET\n');
      const wt = addWorktree(repo, 'u2');
      await symlink(secret, join(wt.path, 'link.txt'));
      await symlink(join(repo.worktrees, '..'), join(wt.path, 'outside'));
      const changes = await changesOf(wt);
      assert.doesNotMatch(JSON.stringify(changes), /TOP SECRET/);
      const link = changes.files.find((f) => f.path === 'link.txt')!;
      assert.deepEqual(link.hunks[0].lines, [`+${secret}`, '\\ No newline at end of file']);
    });
  });

  test('a huge diff is cut: counts stay whole, hunks shown only up to the limits', async () => {
    await withRepo({ 'a.txt': lines(10), 'b.txt': lines(10) }, async (repo) => {
      const wt = addWorktree(repo, 'c2');
      await writeFiles(wt.path, { 'a.txt': lines(3000, ' x'), 'b.txt': lines(10, ' y') });
      const changes = await changesOf(wt, { fileChars: 1000, totalChars: 5000 });
      const a = changes.files.find((f) => f.path === 'a.txt')!;
      assert.equal(a.cut, true);
      assert.equal(a.hunks.length, 0);
      assert.deepEqual([a.additions, a.deletions], [3000, 10]);
      const b = changes.files.find((f) => f.path === 'b.txt')!;
      assert.equal(b.cut, false);
      assert.equal(b.hunks.length, 1);
    });
  });

  test('attack: a diff bigger than git may answer (a file rewritten whole, 100 MB) still lists every file; the files past the cut keep whole counts and can be reverted', async () => {
    // The service reads 64 MiB of diff at most; the same path at 64 KiB here, so the test stays small.
    const readBytes = 64 * 1024;
    await withRepo({ 'a.txt': lines(10), 'big.txt': lines(4000), 'z.txt': lines(10) }, async (repo) => {
      const wt = addWorktree(repo, 'c3');
      await writeFiles(wt.path, { 'a.txt': lines(10, ' a'), 'big.txt': lines(4000, ' rewritten'), 'z.txt': lines(10).replace('line 5\n', 'line 5 z\n'), 'new.txt': 'new\n' });
      git(wt.path, 'mv', 'z.txt', 'zz.txt');
      const changes = await changesOf(wt, { fileChars: 1000, totalChars: 5000, readBytes });
      const byPath = new Map(changes.files.map((f) => [f.path, f]));
      assert.deepEqual([...byPath.keys()].sort(), ['a.txt', 'big.txt', 'new.txt', 'zz.txt']);
      assert.deepEqual([byPath.get('a.txt')!.cut, byPath.get('a.txt')!.hunks.length], [false, 1]);
      const big = byPath.get('big.txt')!;
      assert.deepEqual([big.status, big.cut, big.hunks.length, big.additions, big.deletions], ['modified', true, 0, 4000, 4000]);
      const zz = byPath.get('zz.txt')!;
      assert.deepEqual([zz.status, zz.old_path, zz.cut, zz.additions, zz.deletions], ['renamed', 'z.txt', true, 1, 1]);
      assert.equal(changes.uncommitted_files, 4);
      // A file past the cut is still one get_changes lists, so it can be put back.
      const after = await revertChanges(wt, 'zz.txt');
      assert.equal(await readFile(join(wt.path, 'z.txt'), 'utf8'), lines(10));
      assert.deepEqual(after.files.map((f) => f.path).sort(), ['a.txt', 'big.txt', 'new.txt']);
    });
  });

  test('attack: many big new files are not all held in memory: past the read budget they are counted, not kept, and listed cut', async () => {
    // 12 new files of 15 MB held whole cost the service 450 MB; the same path here with a 64 KiB budget.
    const readBytes = 64 * 1024;
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const wt = addWorktree(repo, 'c4');
      const names = Array.from({ length: 6 }, (_, i) => `new${i}.txt`);
      await writeFiles(wt.path, Object.fromEntries(names.map((name) => [name, lines(2000)])));
      await writeFiles(wt.path, { 'no-newline.txt': 'one\ntwo', 'nul.bin': Buffer.from([1, 0, 2]) });
      const changes = await changesOf(wt, { fileChars: Infinity, totalChars: Infinity, readBytes });
      const byPath = new Map(changes.files.map((f) => [f.path, f]));
      assert.deepEqual([...byPath.keys()].sort(), [...names, 'no-newline.txt', 'nul.bin'].sort());
      for (const name of names) assert.deepEqual([byPath.get(name)!.status, byPath.get(name)!.additions], ['added', 2000], name);
      const kept = names.filter((name) => byPath.get(name)!.hunks.length > 0);
      assert.ok(kept.length <= Math.floor(readBytes / Buffer.byteLength(lines(2000))), `${kept.length} files held whole`);
      for (const name of names.filter((n) => !kept.includes(n))) assert.equal(byPath.get(name)!.cut, true);
      assert.equal(byPath.get('no-newline.txt')!.additions, 2);
      assert.deepEqual([byPath.get('nul.bin')!.binary, byPath.get('nul.bin')!.additions], [true, 0]);
      assert.equal(changes.uncommitted_files, names.length + 2);
    });
  });

  test('base_moved when the workspace branch moved on; a deleted worktree folder is a clear conflict', async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const wt = addWorktree(repo, 'c3');
      await writeFiles(repo.repo, { 'b.txt': 'b\n' });
      git(repo.repo, 'add', 'b.txt');
      git(repo.repo, 'commit', '-q', '-m', 'user');
      assert.equal((await changesOf(wt)).worktree.base_moved, true);
      await rm(wt.path, { recursive: true, force: true });
      await assert.rejects(changesOf(wt), (e: unknown) => e instanceof ServiceError && e.code === 'conflict' && /gone/.test(e.message));
    });
  });
});

describe('revert_changes', () => {
  test('one hunk reversed leaves the other hunks; a stale hunk id is a conflict', async () => {
    await withRepo({ 'app.ts': lines(40) }, async (repo) => {
      const wt = addWorktree(repo, 'r1');
      await writeFiles(wt.path, { 'app.ts': lines(40).replace('line 2\n', 'line 2 changed\n').replace('line 35\n', 'line 35 changed\n') });
      const [first, second] = (await changesOf(wt)).files[0].hunks;
      const answer = await revertChanges(wt, 'app.ts', second.id);
      const text = await readFile(join(wt.path, 'app.ts'), 'utf8');
      assert.match(text, /line 2 changed/);
      assert.doesNotMatch(text, /line 35 changed/);
      assert.deepEqual(
        answer.files[0].hunks.map((h) => h.id),
        [first.id],
      );
      await assert.rejects(revertChanges(wt, 'app.ts', second.id), (e: unknown) => e instanceof ServiceError && e.code === 'conflict');
      await assert.rejects(revertChanges(wt, 'nope.ts'), (e: unknown) => e instanceof ServiceError && e.code === 'not_found');
    });
  });

  test("attack: a path that leads out of the worktree (into the user's tree, or absolute) is refused and changes nothing", async () => {
    await withRepo({ 'app.ts': lines(5) }, async (repo) => {
      const wt = addWorktree(repo, 'r-out');
      await writeFiles(wt.path, { 'app.ts': lines(5, ' (agent)') });
      // The person's own uncommitted edit, which a revert to base would destroy.
      await writeFiles(repo.repo, { 'app.ts': lines(5, ' (person)') });
      for (const path of [relative(wt.path, join(repo.repo, 'app.ts')), join(repo.repo, 'app.ts'), 'sub/../../app.ts']) {
        await assert.rejects(revertChanges(wt, path), (e: unknown) => e instanceof ServiceError && e.code === 'not_found', path);
      }
      assert.equal(await readFile(join(repo.repo, 'app.ts'), 'utf8'), lines(5, ' (person)'), "the person's file is untouched");
      assert.equal(await readFile(join(wt.path, 'app.ts'), 'utf8'), lines(5, ' (agent)'), 'the worktree too');
    });
  });

  for (const where of ['config.worktree', 'the shared config'] as const) {
    test(`attack: core.worktree set in ${where} does not point review's git at the person's tree (get_changes, revert, commit)`, async () => {
      await withRepo({ 'app.ts': lines(5), 'b.ts': lines(3) }, async (repo) => {
        const wt = addWorktree(repo, `redirect-${where === 'config.worktree' ? 'w' : 's'}`);
        await writeFiles(wt.path, { 'app.ts': lines(5, ' (agent)') });
        git(wt.path, 'commit', '-q', '-am', 'agent work');
        // The person's own uncommitted edits, which a revert to base (or a commit of "everything") would take.
        await writeFiles(repo.repo, { 'b.ts': lines(3, ' (person)'), 'mine.txt': 'mine\n' });
        // What the agent's `git config` (a run_command in its worktree) can write: git's work tree moved
        // out of the worktree, into the person's.
        if (where === 'config.worktree') {
          git(wt.path, 'config', 'extensions.worktreeConfig', 'true');
          git(wt.path, 'config', '--worktree', 'core.worktree', repo.repo);
        } else git(repo.repo, 'config', 'core.worktree', repo.repo);
        const person = snapshot(repo.repo);
        const changes = await changesOf(wt);
        assert.deepEqual(
          changes.files.map((f) => f.path),
          ['app.ts'],
          "the worktree's changes, not the person's",
        );
        await assert.rejects(revertChanges(wt, 'b.ts'), (e: unknown) => e instanceof ServiceError && e.code === 'not_found');
        await writeFiles(wt.path, { 'app.ts': lines(5, ' (agent, again)') });
        const { commit } = await commitChanges(wt, 'more agent work', noHooks);
        assert.deepEqual(git(wt.path, 'show', '--name-only', '--format=', commit).trim().split('\n'), ['app.ts'], "only the worktree's file committed");
        await revertChanges(wt, 'app.ts');
        assert.equal(await readFile(join(wt.path, 'app.ts'), 'utf8'), lines(5), "the worktree's file reverted");
        assert.equal(await readFile(join(repo.repo, 'b.ts'), 'utf8'), lines(3, ' (person)'), "the person's edit kept");
        assert.equal(await readFile(join(repo.repo, 'mine.txt'), 'utf8'), 'mine\n');
        assert.deepEqual(snapshot(repo.repo), person, "the person's tree and HEAD untouched");
      });
    });
  }

  test('whole files back to base: an added file deleted, a deleted one restored, a rename undone, a committed change too', async () => {
    await withRepo({ 'keep.txt': 'base\n', 'del.txt': 'del\n', 'old.txt': 'old\n' }, async (repo) => {
      const wt = addWorktree(repo, 'r2');
      await writeFiles(wt.path, { 'keep.txt': 'changed\n', 'added.txt': 'new\n' });
      git(wt.path, 'commit', '-q', '-am', 'committed change');
      await rm(join(wt.path, 'del.txt'));
      git(wt.path, 'mv', 'old.txt', 'moved.txt');
      for (const path of ['keep.txt', 'added.txt', 'del.txt', 'moved.txt']) await revertChanges(wt, path);
      const changes = await changesOf(wt);
      assert.deepEqual(changes.files, []);
      assert.equal(await readFile(join(wt.path, 'keep.txt'), 'utf8'), 'base\n');
      assert.equal(existsSync(join(wt.path, 'added.txt')), false);
      assert.equal(await readFile(join(wt.path, 'del.txt'), 'utf8'), 'del\n');
      assert.equal(existsSync(join(wt.path, 'moved.txt')), false);
      assert.equal(await readFile(join(wt.path, 'old.txt'), 'utf8'), 'old\n');
    });
  });
});

describe('commit_changes', () => {
  test("attack: the repository's pre-commit hook does not run unless the owner allows hooks", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const marker = join(repo.worktrees, '..', 'hook-ran');
      const hook = join(repo.repo, '.git', 'hooks', 'pre-commit');
      await writeFile(hook, `#!/bin/sh\necho ran > '${marker}'\n`);
      await chmod(hook, 0o755);
      const wt = addWorktree(repo, 'k1');
      await writeFiles(wt.path, { 'a.txt': 'b\n', 'n.txt': 'new\n' });
      const { commit } = await commitChanges(wt, 'agent work', noHooks);
      assert.equal(existsSync(marker), false, 'the pre-commit hook ran');
      assert.equal(git(wt.path, 'rev-parse', 'HEAD').trim(), commit);
      assert.equal(git(wt.path, 'log', '-1', '--format=%an <%ae>|%s').trim(), 'Test Person <person@example.com>|agent work');
      assert.equal(git(wt.path, 'status', '--porcelain').trim(), '');
      // Allowed by the owner: the hook runs.
      await writeFiles(wt.path, { 'a.txt': 'c\n' });
      await commitChanges(wt, 'second', { allowHooks: true });
      assert.equal(existsSync(marker), true);
      await assert.rejects(commitChanges(wt, 'nothing', noHooks), (e: unknown) => e instanceof ServiceError && e.code === 'conflict');
    });
  });

  test('the staged diff is read once: one git diff --cached tells whether there is anything and which files to check', async () => {
    await withRepo({ 'a.txt': 'a\n', 'gone.txt': 'bye\n' }, async (repo) => {
      const wt = addWorktree(repo, 'k3');
      await writeFiles(wt.path, { 'a.txt': 'b\n', 'n.txt': 'new\n' });
      await rm(join(wt.path, 'gone.txt'));
      let commit = '';
      const runs = await gitRuns(async () => ({ commit } = await commitChanges(wt, 'agent work', noHooks)));
      assert.equal(runs.filter((args) => args.includes('diff') && args.includes('--cached')).length, 1, runs.map((a) => a.join(' ')).join('\n'));
      assert.equal(git(wt.path, 'show', '--name-status', '--format=', commit).trim().split('\n').sort().join(','), 'A\tn.txt,D\tgone.txt,M\ta.txt');
      // Nothing left: still a clear conflict, from that one diff.
      const again = await gitRuns(() =>
        assert.rejects(commitChanges(wt, 'nothing', noHooks), (e: unknown) => e instanceof ServiceError && e.code === 'conflict' && /nothing to commit/.test(e.message)),
      );
      assert.equal(again.filter((args) => args.includes('diff') && args.includes('--cached')).length, 1);
    });
  });

  test('no git identity configured: a clear error, nothing staged or committed', async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const wt = addWorktree(repo, 'k2');
      await writeFiles(wt.path, { 'a.txt': 'b\n' });
      const saved = process.env.HOME;
      const bare = await isolateGitConfig(false);
      try {
        const head = git(wt.path, 'rev-parse', 'HEAD');
        await assert.rejects(commitChanges(wt, 'x', noHooks), (e: unknown) => e instanceof ServiceError && e.code === 'invalid_request' && /user\.name or user\.email/.test(e.message));
        assert.equal(git(wt.path, 'rev-parse', 'HEAD'), head);
        assert.equal(git(wt.path, 'diff', '--cached', '--name-only'), '');
      } finally {
        process.env.HOME = saved;
        await bare.cleanup();
      }
    });
  });
});

describe('land_changes', () => {
  test('two worktrees and the user edit the same file: the first lands, the second conflicts and changes nothing', async () => {
    await withRepo({ 'app.ts': lines(20), 'notes.md': 'notes\n' }, async (repo) => {
      const one = addWorktree(repo, 'l1');
      const two = addWorktree(repo, 'l2');
      await writeFiles(one.path, { 'app.ts': lines(20).replace('line 5\n', 'line 5 by one\n') });
      await writeFiles(two.path, { 'app.ts': lines(20).replace('line 5\n', 'line 5 by two\n') });
      // The user's own edit, uncommitted, to the same file in the working tree.
      await writeFiles(repo.repo, { 'app.ts': lines(20).replace('line 9\n', 'line 9 by the user\n') });
      assert.match(await readFile(join(one.path, 'app.ts'), 'utf8'), /by one/);
      assert.match(await readFile(join(two.path, 'app.ts'), 'utf8'), /by two/);
      assert.match(await readFile(join(repo.repo, 'app.ts'), 'utf8'), /by the user/);
      await commitChanges(one, 'one', noHooks);
      await commitChanges(two, 'two', noHooks);

      // The user's uncommitted change to a file the branch touches: blocked, nothing changed.
      const dirty = snapshot(repo.repo);
      const refused = await landChanges(one, 'merge', noHooks);
      assert.equal(refused.landed, false);
      assert.deepEqual(refused.blocked?.reason, 'uncommitted');
      assert.deepEqual(refused.blocked?.files, ['app.ts']);
      assert.deepEqual(snapshot(repo.repo), dirty);
      assert.match(await readFile(join(repo.repo, 'app.ts'), 'utf8'), /by the user/);

      // The user moves their edit to another file: it stays, untouched, through the land.
      await writeFiles(repo.repo, { 'app.ts': lines(20), 'notes.md': 'my notes\n' });
      const landed = await landChanges(one, 'merge', noHooks);
      assert.equal(landed.landed, true, JSON.stringify(landed.blocked));
      assert.equal(git(repo.repo, 'rev-parse', 'HEAD').trim(), landed.commit);
      assert.equal(git(repo.repo, 'log', '-1', '--format=%P', landed.commit!).trim().split(' ').length, 2);
      assert.match(await readFile(join(repo.repo, 'app.ts'), 'utf8'), /line 5 by one/);
      assert.equal(await readFile(join(repo.repo, 'notes.md'), 'utf8'), 'my notes\n');

      const before = snapshot(repo.repo);
      const second = await landChanges(two, 'squash', noHooks);
      assert.equal(second.landed, false);
      assert.equal(second.blocked?.reason, 'conflict');
      assert.deepEqual(second.blocked?.files, ['app.ts']);
      assert.deepEqual(snapshot(repo.repo), before);
      assert.equal(existsSync(join(repo.repo, '.git', 'MERGE_HEAD')), false);
    });
  });

  test('squash makes one commit; rebase replays each commit with its author onto a base that moved', async () => {
    await withRepo({ 'a.txt': 'a\n', 'b.txt': 'b\n' }, async (repo) => {
      const sq = addWorktree(repo, 's1');
      const rb = addWorktree(repo, 's2');
      await writeFiles(sq.path, { 'a.txt': 'a squashed\n' });
      await commitChanges(sq, 'first', noHooks);
      await writeFiles(sq.path, { 'c.txt': 'c\n' });
      await commitChanges(sq, 'second', noHooks);
      const squash = await landChanges(sq, 'squash', { ...noHooks, message: 'All of it' });
      assert.equal(squash.landed, true);
      assert.equal(git(repo.repo, 'log', '-1', '--format=%P|%s').trim(), `${sq.baseCommit}|All of it`);
      assert.equal(await readFile(join(repo.repo, 'c.txt'), 'utf8'), 'c\n');

      await writeFiles(rb.path, { 'b.txt': 'b rebased\n' });
      git(rb.path, '-c', 'user.name=Other Author', '-c', 'user.email=other@example.com', 'commit', '-q', '-am', 'by other');
      const rebase = await landChanges(rb, 'rebase', noHooks);
      assert.equal(rebase.landed, true, JSON.stringify(rebase.blocked));
      assert.equal(git(repo.repo, 'log', '-1', '--format=%an|%s|%P').trim(), `Other Author|by other|${squash.commit}`);
      assert.equal(await readFile(join(repo.repo, 'b.txt'), 'utf8'), 'b rebased\n');
      assert.equal(git(repo.repo, 'status', '--porcelain'), '');

      const again = await landChanges(rb, 'merge', noHooks);
      assert.equal(again.blocked?.reason, 'nothing_to_land');
    });
  });

  test('not on the base branch, or nothing committed: blocked, nothing changed', async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const wt = addWorktree(repo, 'n1');
      await writeFiles(wt.path, { 'a.txt': 'b\n' });
      assert.equal((await landChanges(wt, 'merge', noHooks)).blocked?.reason, 'nothing_to_land');
      await commitChanges(wt, 'x', noHooks);
      git(repo.repo, 'checkout', '-q', '-b', 'elsewhere');
      const before = snapshot(repo.repo);
      const answer = await landChanges(wt, 'merge', noHooks);
      assert.equal(answer.blocked?.reason, 'not_on_base');
      assert.match(answer.blocked!.message, /elsewhere/);
      assert.deepEqual(snapshot(repo.repo), before);
    });
  });
});

describe('push and discard', () => {
  test('pushes the branch to a bare remote; the compare URL only for a known host', async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const { bare, wt, commit } = await originAndWork(repo, 'p1');
      const answer = await pushChanges(wt, 'origin', noHooks);
      assert.deepEqual(answer, { remote: 'origin', branch: wt.branch, compare_url: null });
      assert.equal(git(bare, 'rev-parse', `refs/heads/${wt.branch}`).trim(), commit);
      await assert.rejects(pushChanges(wt, 'upstream', noHooks), (e: unknown) => e instanceof ServiceError && e.code === 'invalid_request' && /origin/.test(e.message));
    });
  });

  test('a remote with several push URLs: a failing one does not stop the push to the others (as git); the error names each that failed', async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const missing = join(repo.worktrees, '..', 'no-such-remote.git');
      const { bare, wt, commit } = await originAndWork(repo, 'p-every');
      git(repo.repo, 'config', '--add', 'remote.origin.pushurl', missing);
      git(repo.repo, 'config', '--add', 'remote.origin.pushurl', bare);
      const refused = await pushChanges(wt, 'origin', noHooks).then(
        () => undefined,
        (error: unknown) => error,
      );
      assert.equal(git(bare, 'for-each-ref', '--format=%(objectname)', `refs/heads/${wt.branch}`).trim(), commit, 'the push stopped at the first failing URL');
      assert.ok(refused instanceof ServiceError && refused.code === 'conflict', String(refused));
      assert.match(refused.message, new RegExp(`${missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `), 'the failing URL is named');
      assert.match(refused.message, /pushed to 1 of 2/);
    });
  });

  test("a successful push updates the remote-tracking branch as git does (refs/remotes/<remote>/<branch>, from the remote's fetch refspec); attack: a fetch refspec mapping elsewhere than refs/remotes/ moves nothing", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const { bare, wt, commit } = await originAndWork(repo, 'p-tracking');
      git(repo.repo, 'remote', 'add', 'other', bare);
      git(repo.repo, 'config', 'remote.other.fetch', `+refs/heads/${wt.branch}:refs/heads/main`);
      await pushChanges(wt, 'origin', noHooks);
      assert.equal(git(repo.repo, 'for-each-ref', '--format=%(objectname)', `refs/remotes/origin/${wt.branch}`).trim(), commit, 'no remote-tracking branch');
      const main = git(repo.repo, 'rev-parse', 'refs/heads/main').trim();
      await pushChanges(wt, 'other', noHooks);
      assert.equal(git(repo.repo, 'rev-parse', 'refs/heads/main').trim(), main, "the person's main branch was moved by the push");
      // A remote-tracking branch git cannot write (its ref locked) does not fail the push, as with git.
      await writeFiles(wt.path, { 'a.txt': 'pushed again\n' });
      const { commit: next } = await commitChanges(wt, 'again', noHooks);
      await writeFiles(repo.repo, { [`.git/refs/remotes/origin/${wt.branch}.lock`]: '' });
      await pushChanges(wt, 'origin', noHooks);
      assert.equal(git(bare, 'rev-parse', `refs/heads/${wt.branch}`).trim(), next);
    });
  });

  test("attack: a remote-tracking branch made a symbolic ref, a symlink or under a symlinked folder does not let the push move the person's branch", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const { wt, commit } = await originAndWork(repo, 'p-symref');
      const main = git(repo.repo, 'rev-parse', 'refs/heads/main').trim();
      const tracking = `refs/remotes/origin/${wt.branch}`;
      // A symbolic ref (what `git symbolic-ref` writes): git update-ref follows it unless told not to.
      git(repo.repo, 'symbolic-ref', tracking, 'refs/heads/main');
      await pushChanges(wt, 'origin', noHooks);
      assert.equal(git(repo.repo, 'rev-parse', 'refs/heads/main').trim(), main, 'a symbolic remote-tracking ref moved main');
      // A folder of refs/remotes that is a symlink to refs/heads: the operating system follows it.
      git(repo.repo, 'remote', 'add', 'evil', git(repo.repo, 'remote', 'get-url', 'origin').trim());
      git(repo.repo, 'config', 'remote.evil.fetch', `+refs/heads/${wt.branch}:refs/remotes/evil/main`);
      await symlink('../heads', join(repo.repo, '.git/refs/remotes/evil'));
      await pushChanges(wt, 'evil', noHooks);
      assert.equal(git(repo.repo, 'rev-parse', 'refs/heads/main').trim(), main, 'a symlinked refs/remotes folder moved main');
      assert.notEqual(main, commit);
    });
  });

  test("remote-tracking branches are found by the remote's fetch refspecs as git finds them: the first match, a glob, a negative refspec", () => {
    const ref = 'refs/heads/assistant/x';
    assert.equal(trackingRefOf(['+refs/heads/*:refs/remotes/origin/*'], ref), 'refs/remotes/origin/assistant/x');
    assert.equal(trackingRefOf(['refs/heads/main:refs/remotes/origin/main', '+refs/heads/assistant/*:refs/remotes/o/a-*', 'refs/heads/*:refs/remotes/z/*'], ref), 'refs/remotes/o/a-x');
    assert.equal(trackingRefOf(['+refs/heads/*:refs/remotes/origin/*', '^refs/heads/assistant/*'], ref), undefined);
    assert.equal(trackingRefOf(['refs/heads/*', 'refs/heads/*:refs/remotes/o/x', `${ref}:refs/remotes/o/exact`], ref), 'refs/remotes/o/exact');
    assert.equal(trackingRefOf([], ref), undefined);
  });

  test("a push timeout on the allow_hooks path names git's subcommand (push), not `-c`", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const bare = join(repo.worktrees, '..', 'remote.git');
      git(repo.repo, 'init', '-q', '--bare', bare);
      git(repo.repo, 'remote', 'add', 'origin', bare);
      await writeFiles(repo.repo, { '.git/hooks/pre-push': '#!/bin/sh\nexec sleep 5 </dev/null >/dev/null 2>&1\n' });
      await chmod(join(repo.repo, '.git', 'hooks', 'pre-push'), 0o755);
      const wt = addWorktree(repo, 'p-timeout');
      const refused = await gitIn(wt.path, ['-c', 'protocol.ext.allow=never', 'push', '--porcelain', '--', 'origin', `refs/heads/${wt.branch}`], { allowHooks: true, timeoutMs: 200 }).then(
        () => undefined,
        (error: unknown) => error,
      );
      assert.ok(refused instanceof ServiceError && refused.code === 'server_error', String(refused));
      assert.match(refused.message, /\(push\)/);
    });
  });

  test("attack: a push's temporary config (the URL, 0600) left by a push killed with -9 is removed by the next push", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const { wt } = await originAndWork(repo, 'p-leftover');
      // A real push in a child process, killed with -9 while its temporary repository exists.
      const leftover = await pushKilledMidway(wt);
      assert.equal(existsSync(join(leftover, 'config')), true, 'the killed push left no config to test with');
      await pushChanges(wt, 'origin', noHooks);
      assert.equal(existsSync(leftover), false, 'the killed push left its config behind');
    });
  });

  test("attack: a remote's receivepack or an ext:: URL in the repository's config runs nothing on push", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const bare = join(repo.worktrees, '..', 'remote.git');
      const marker = join(repo.worktrees, '..', 'transport-ran');
      git(repo.repo, 'init', '-q', '--bare', bare);
      git(repo.repo, 'remote', 'add', 'origin', bare);
      git(repo.repo, 'config', 'remote.origin.receivepack', `touch '${marker}'; git-receive-pack`);
      git(repo.repo, 'config', 'protocol.ext.allow', 'always');
      git(repo.repo, 'remote', 'add', 'sidedoor', `ext::sh -c touch% ${marker}`);
      const wt = addWorktree(repo, 'p3');
      await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
      const { commit } = await commitChanges(wt, 'to push', noHooks);
      await pushChanges(wt, 'origin', noHooks);
      assert.equal(existsSync(marker), false, "the remote's receivepack ran");
      assert.equal(git(bare, 'rev-parse', `refs/heads/${wt.branch}`).trim(), commit, 'pushed with git-receive-pack');
      await assert.rejects(pushChanges(wt, 'sidedoor', noHooks), (e: unknown) => e instanceof ServiceError && e.code === 'conflict');
      assert.equal(existsSync(marker), false, 'the ext:: command ran');
    });
  });

  test("attack: a command the repository's own config names for a transport (core.sshCommand, core.gitProxy, core.askPass, a credential helper) is refused on push; nothing runs", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const marker = join(repo.worktrees, '..', 'transport-command-ran');
      const wt = addWorktree(repo, 'p4');
      await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
      await commitChanges(wt, 'to push', noHooks);
      git(repo.repo, 'remote', 'add', 'overssh', 'ssh://127.0.0.1:9/x.git');
      git(repo.repo, 'remote', 'add', 'overgit', 'git://127.0.0.1:9/x.git');
      const settings: [string, string][] = [
        ['core.sshCommand', `touch '${marker}'; false`],
        ['core.gitProxy', `!touch '${marker}'; false`],
        ['core.askPass', `touch '${marker}'; false`],
        ['credential.helper', `!touch '${marker}'; false`],
        ['credential.https://127.0.0.1.helper', `store ; touch '${marker}'`],
      ];
      for (const [key, value] of settings) {
        git(repo.repo, 'config', key, value);
        for (const remote of ['overssh', 'overgit']) {
          await assert.rejects(pushChanges(wt, remote, noHooks), (e: unknown) => e instanceof ServiceError && e.code === 'conflict', `${key} on ${remote}`);
          assert.equal(existsSync(marker), false, `${key} ran on a push to ${remote}`);
        }
        git(repo.repo, 'config', '--unset', key);
      }
      // A helper by its plain name is git's own credential-<name> program: the push goes on.
      const bare = join(repo.worktrees, '..', 'remote.git');
      git(repo.repo, 'init', '-q', '--bare', bare);
      git(repo.repo, 'remote', 'add', 'origin', bare);
      git(repo.repo, 'config', 'credential.helper', 'cache --timeout=60');
      assert.equal((await pushChanges(wt, 'origin', noHooks)).branch, wt.branch);
      // The owner's allow_hooks lets the repository's own programs run on push (its sshCommand is not used for a local remote).
      git(repo.repo, 'config', 'core.sshCommand', `touch '${marker}'; false`);
      assert.equal((await pushChanges(wt, 'origin', { allowHooks: true })).branch, wt.branch);
    });
  });

  test("attack: a local remote's own hooks, core.hooksPath and alternateRefsCommand run nothing on push (a path or file:// URL); a plain local bare remote is pushed to", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const bare = join(repo.worktrees, '..', 'remote.git');
      const marker = join(repo.worktrees, '..', 'remote-hook-ran');
      git(repo.repo, 'init', '-q', '--bare', bare);
      // Every hook a receive-pack runs, in the remote's hooks folder and in one its own config names.
      const hook = `#!/bin/sh\necho "$0" >> '${marker}'\n`;
      const names = ['pre-receive', 'update', 'post-receive', 'post-update', 'reference-transaction', 'push-to-checkout'];
      await writeFiles(
        bare,
        Object.fromEntries(
          names.flatMap((name) => [
            [`hooks/${name}`, hook],
            [`own-hooks/${name}`, hook],
          ]),
        ),
      );
      for (const name of names) await Promise.all([chmod(join(bare, 'hooks', name), 0o755), chmod(join(bare, 'own-hooks', name), 0o755)]);
      // An alternate object store makes receive-pack run the command its config names to list the alternate's refs.
      const alternate = join(repo.worktrees, '..', 'alternate.git');
      git(repo.repo, 'init', '-q', '--bare', alternate);
      await writeFiles(bare, { 'objects/info/alternates': `${join(alternate, 'objects')}\n` });
      git(bare, 'config', 'core.alternateRefsCommand', `touch '${marker}'; true`);
      git(repo.repo, 'remote', 'add', 'origin', bare);
      git(repo.repo, 'remote', 'add', 'byurl', `file://${bare}`);
      const wt = addWorktree(repo, 'p5');
      await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
      const { commit } = await commitChanges(wt, 'to push', noHooks);
      for (const hooksPath of [null, join(bare, 'own-hooks')]) {
        if (hooksPath) git(bare, 'config', 'core.hooksPath', hooksPath);
        for (const remote of ['origin', 'byurl']) {
          git(bare, '-c', 'core.hooksPath=/dev/null', 'update-ref', '-d', `refs/heads/${wt.branch}`);
          assert.equal((await pushChanges(wt, remote, noHooks)).branch, wt.branch);
          assert.equal(
            existsSync(marker),
            false,
            `the remote's own programs ran on a push to ${remote} (core.hooksPath ${hooksPath ?? 'unset'}): ${existsSync(marker) ? await readFile(marker, 'utf8') : ''}`,
          );
          assert.equal(git(bare, 'rev-parse', `refs/heads/${wt.branch}`).trim(), commit, `pushed to ${remote}`);
        }
      }
      // The owner's allow_hooks lets them run, as in a terminal.
      git(bare, '-c', 'core.hooksPath=/dev/null', 'update-ref', '-d', `refs/heads/${wt.branch}`);
      await pushChanges(wt, 'origin', { allowHooks: true });
      assert.equal(existsSync(marker), true, 'allow_hooks runs the remote hooks');
    });
  });

  test("attack: a remote with push URLs elsewhere and on this machine is refused (the local one's hooks would run); what git reaches locally", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const bare = join(repo.worktrees, '..', 'remote.git');
      const marker = join(repo.worktrees, '..', 'mixed-hook-ran');
      await bareWithHook(repo.repo, bare, marker);
      git(repo.repo, 'remote', 'add', 'mixed', bare);
      git(repo.repo, 'config', '--add', 'remote.mixed.pushurl', bare);
      git(repo.repo, 'config', '--add', 'remote.mixed.pushurl', 'git://127.0.0.1:9/x.git');
      const wt = addWorktree(repo, 'p7');
      await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
      await commitChanges(wt, 'to push', noHooks);
      const refused = await pushChanges(wt, 'mixed', noHooks).then(
        () => undefined,
        (error: unknown) => error,
      );
      assert.equal(existsSync(marker), false, "the local push URL's hook ran");
      assert.ok(refused instanceof ServiceError && refused.code === 'conflict', String(refused));
    });
    for (const url of ['/srv/git/app.git', 'app.git', './a:b', 'file:///srv/app.git', 'C/x:y']) assert.equal(isLocalRemote(url), true, url);
    for (const url of ['git@github.com:me/app.git', 'host:path/x', 'ssh://h/x', 'git://h/x', 'https://h/x', 'ext::sh -c x', 'fd::3', '[h:22]:x']) assert.equal(isLocalRemote(url), false, url);
  });

  test('git config entries read with --null: a key written with no value is true, as git reads it; a value keeps its newlines', () => {
    assert.deepEqual(configEntries('global\0http.sslverify\0local\0http.proxy\nhttp://p:1\0global\0x.y\na\nb\0'), [
      { scope: 'global', key: 'http.sslverify', value: 'true' },
      { scope: 'local', key: 'http.proxy', value: 'http://p:1' },
      { scope: 'global', key: 'x.y', value: 'a\nb' },
    ]);
  });

  test("the push's global config includes the person's own files; with HOME unset, those under the system's home folder", () => {
    assert.deepEqual(personalConfigFiles({ HOME: '/h' }), [join('/h', '.config', 'git', 'config'), join('/h', '.gitconfig')]);
    assert.deepEqual(personalConfigFiles({ HOME: '/h', XDG_CONFIG_HOME: '/x' }), [join('/x', 'git', 'config'), join('/h', '.gitconfig')]);
    assert.deepEqual(personalConfigFiles({}), [join(homedir(), '.config', 'git', 'config'), join(homedir(), '.gitconfig')]);
  });

  test('the push pins each transport setting: the checked value, or what git uses with none; lists emptied then refilled', () => {
    const url = 'https://h/x.git';
    const checked: [string, string][] = [
      ['credential.helper', 'store'],
      ['credential.https://h.helper', 'cache --timeout=60'],
      ['http.curloptresolve', 'h:443:127.0.0.1'],
    ];
    const pins = pinnedTransport(checked, new Map([['proxy', 'http://p:1']]), url, { SSH_ASKPASS: '/a' });
    assert.deepEqual(pins, [
      ['core.sshCommand', 'ssh'],
      ['core.askPass', '/a'],
      ['credential.helper', ''],
      ['credential.helper', 'store'],
      ['credential.https://h.helper', 'cache --timeout=60'],
      [`http.${url}.proxy`, 'http://p:1'],
      [`http.${url}.sslVerify`, 'true'],
      [`http.${url}.curloptResolve`, ''],
      [`http.${url}.curloptResolve`, 'h:443:127.0.0.1'],
    ]);
    // No proxy configured: the environment's, as git reads it (lowercase first); none at all: empty (no proxy).
    assert.deepEqual(
      pinnedTransport([], new Map(), url, { https_proxy: 'http://e:1', HTTPS_PROXY: 'http://E:1' }).find(([key]) => key.endsWith('.proxy')),
      [`http.${url}.proxy`, 'http://e:1'],
    );
    assert.deepEqual(
      pinnedTransport([], new Map(), url, {}).find(([key]) => key.endsWith('.proxy')),
      [`http.${url}.proxy`, ''],
    );
    // Not http: no http.* key (git refuses a URL-matched key that is not a URL).
    assert.equal(pinnedTransport([], undefined, 'ssh://h/x', {}).filter(([key]) => key.startsWith('http.')).length, 0);
  });

  test("attack: an https remote the repository's config rewrites to a local path (url.<base>.insteadOf, pushInsteadOf) runs none of that repository's hooks on push", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const bare = join(repo.worktrees, '..', 'bare');
      const marker = join(repo.worktrees, '..', 'insteadof-hook-ran');
      await bareWithHook(repo.repo, join(bare, 'x'), marker);
      git(repo.repo, 'remote', 'add', 'origin', 'https://example.invalid/x');
      const wt = addWorktree(repo, 'p8i');
      await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
      const { commit } = await commitChanges(wt, 'to push', noHooks);
      for (const key of ['insteadOf', 'pushInsteadOf']) {
        git(repo.repo, 'config', `url.${bare}/.${key}`, 'https://example.invalid/');
        git(join(bare, 'x'), '-c', 'core.hooksPath=/dev/null', 'update-ref', '-d', `refs/heads/${wt.branch}`);
        await pushChanges(wt, 'origin', noHooks);
        assert.equal(existsSync(marker), false, `the rewritten (${key}) local remote's pre-receive hook ran`);
        assert.equal(git(join(bare, 'x'), 'rev-parse', `refs/heads/${wt.branch}`).trim(), commit, `pushed to the path ${key} names`);
        git(repo.repo, 'config', '--unset', `url.${bare}/.${key}`);
      }
    });
    // Forms git reads as a path on some system: a drive letter (Windows), a share, file: in any case.
    for (const url of ['FILE:///srv/app.git', 'File://srv/app.git', '\\\\server\\share\\app.git']) assert.equal(isLocalRemote(url), true, url);
    for (const url of ['C:/x', 'C:\\x', 'c:x']) assert.equal(isLocalRemote(url, 'win32'), true, url);
    assert.equal(isLocalRemote('C:/x', 'linux'), false, 'scp-like host C elsewhere');
  });

  test("attack: the repository's config changed between the push's check and the push (a new URL, an exact pushInsteadOf) does not send the branch to a local repository whose hooks run", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const bare = join(repo.worktrees, '..', 'swapped.git');
      const marker = join(repo.worktrees, '..', 'swapped-hook-ran');
      await bareWithHook(repo.repo, bare, marker);
      // Checked: a remote elsewhere (nothing listens there), so git's own receive-pack is chosen for it.
      const checked = 'https://127.0.0.1:9/x.git';
      git(repo.repo, 'remote', 'add', 'origin', checked);
      const wt = addWorktree(repo, 'p8s');
      await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
      await commitChanges(wt, 'to push', noHooks);
      // A turn's shell writes the config while the checks run: held here at the moment the push starts.
      const swaps: [string, () => void, () => void][] = [
        ['a new URL for the remote', () => git(repo.repo, 'remote', 'set-url', 'origin', bare), () => git(repo.repo, 'remote', 'set-url', 'origin', checked)],
        ...['pushInsteadOf', 'insteadOf'].map((key): [string, () => void, () => void] => [
          `a ${key} of the checked URL itself`,
          () => git(repo.repo, 'config', `url.${bare}.${key}`, checked),
          () => git(repo.repo, 'config', '--unset', `url.${bare}.${key}`),
        ]),
      ];
      for (const [swap, write, undo] of swaps) {
        const refused = await pushWithConfigChanged(wt, 'origin', write);
        assert.equal(existsSync(marker), false, `the local repository's pre-receive hook ran after ${swap}`);
        assert.ok(refused instanceof ServiceError && refused.code === 'conflict' && refused.message.includes('127.0.0.1:9'), `${swap}: ${String(refused)}`);
        undo();
      }
    });
  });

  test("attack: a transport command the repository's config names only after the push's check (core.sshCommand, core.askPass) does not run", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const marker = join(repo.worktrees, '..', 'late-command-ran');
      // A program (askPass is run as one, not by a shell).
      const program = join(repo.worktrees, '..', 'late-command.sh');
      await writeFile(program, `#!/bin/sh\ntouch '${marker}'\nexit 1\n`);
      await chmod(program, 0o755);
      // Asks for a password: git looks for a helper, then for askPass.
      const server = createServer((_request, response) => response.writeHead(401, { 'WWW-Authenticate': 'Basic realm="x"' }).end());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        git(repo.repo, 'remote', 'add', 'overssh', 'ssh://127.0.0.1:9/x.git');
        git(repo.repo, 'remote', 'add', 'overhttp', `http://127.0.0.1:${(server.address() as AddressInfo).port}/x.git`);
        const wt = addWorktree(repo, 'p8c');
        await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
        await commitChanges(wt, 'to push', noHooks);
        for (const [remote, key] of [
          ['overssh', 'core.sshCommand'],
          ['overhttp', 'core.askPass'],
        ]) {
          const refused = await pushWithConfigChanged(wt, remote, () => git(repo.repo, 'config', key, program));
          assert.equal(existsSync(marker), false, `${key}, written after the check, ran on a push to ${remote}`);
          assert.ok(refused instanceof ServiceError && refused.code === 'conflict', `${remote}: ${String(refused)}`);
          git(repo.repo, 'config', '--unset', key);
        }
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });
  });

  test("attack: a credential helper, an include naming one, an http proxy or a git:// proxy the repository's config names only after the push's check is not used", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const marker = join(repo.worktrees, '..', 'late-helper-ran');
      const program = join(repo.worktrees, '..', 'late-helper.sh');
      await writeFile(program, `#!/bin/sh\ntouch '${marker}'\nexit 1\n`);
      await chmod(program, 0o755);
      const include = join(repo.worktrees, '..', 'late-helper.inc');
      await writeFile(include, `[credential]\n\thelper = !${program}\n`);
      // Asks for a password: git asks its credential helpers.
      const server = createServer((_request, response) => response.writeHead(401, { 'WWW-Authenticate': 'Basic realm="x"' }).end());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      // A proxy that counts who connects to it (and answers nothing).
      let proxied = 0;
      const proxy = createNetServer((socket) => {
        proxied++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
      try {
        git(repo.repo, 'remote', 'add', 'overhttp', `http://127.0.0.1:${(server.address() as AddressInfo).port}/x.git`);
        git(repo.repo, 'remote', 'add', 'overgit', 'git://127.0.0.1:9/x.git');
        const wt = addWorktree(repo, 'p10c');
        await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
        await commitChanges(wt, 'to push', noHooks);
        for (const [remote, key, value] of [
          ['overhttp', 'credential.helper', `!${program}`],
          ['overhttp', 'include.path', include],
          ['overgit', 'core.gitProxy', program],
          ['overhttp', 'http.proxy', `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`],
        ]) {
          const refused = await pushWithConfigChanged(wt, remote, () => git(repo.repo, 'config', key, value));
          assert.equal(existsSync(marker), false, `${key}, written after the check, ran on a push to ${remote}`);
          assert.equal(proxied, 0, `${key}, written after the check, sent the push to ${remote} through its proxy`);
          assert.ok(refused instanceof ServiceError && refused.code === 'conflict', `${key}: ${String(refused)}`);
          git(repo.repo, 'config', '--unset', key);
        }
      } finally {
        await new Promise((resolve) => server.close(resolve));
        await new Promise((resolve) => proxy.close(resolve));
      }
    });
  });

  test('attack: a push URL git could read as a remote name (a relative path, scp-like host:repo) is not redirected by a remote of that name written after the check', async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      let reached = 0;
      const elsewhere = createServer((_request, response) => {
        reached++;
        response.writeHead(401, { 'WWW-Authenticate': 'Basic realm="x"' }).end();
      });
      await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
      try {
        const wt = addWorktree(repo, 'p10n');
        await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
        await commitChanges(wt, 'to push', noHooks);
        // A bare repository named `up` beside the worktree, its URL relative (git reads it from the worktree).
        git(repo.repo, 'init', '-q', '--bare', join(wt.path, 'up'));
        git(repo.repo, 'remote', 'add', 'rel', 'up');
        git(repo.repo, 'remote', 'add', 'scp', '127.0.0.1:x.git');
        for (const [remote, name] of [
          ['rel', 'up'],
          ['scp', '127.0.0.1:x.git'],
        ]) {
          const answer = await pushWithConfigChanged(wt, remote, () => git(repo.repo, 'config', `remote.${name}.url`, `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/x.git`));
          assert.equal(reached, 0, `a remote named ${name}, written after the check, took the push to ${remote}: ${String(answer)}`);
          git(repo.repo, 'config', '--unset', `remote.${name}.url`);
        }
        // The relative path itself was pushed to.
        assert.equal(git(join(wt.path, 'up'), 'rev-parse', `refs/heads/${wt.branch}`).trim(), git(wt.path, 'rev-parse', 'HEAD').trim());
      } finally {
        await new Promise((resolve) => elsewhere.close(resolve));
      }
    });
  });

  test('attack: a remote named after the push URL itself (remote.<URL>.url, remote.<URL>.proxy), written after the check, neither redirects the push to a local repository whose hook runs nor sends it through a proxy', async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const { url, proxyUrl, proxied, close } = await forgeAndProxy();
      try {
        git(repo.repo, 'remote', 'add', 'origin', url);
        const wt = addWorktree(repo, 'p10u');
        await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
        await commitChanges(wt, 'to push', noHooks);
        const marker = join(repo.worktrees, '..', 'url-hook-ran');
        const bare = join(repo.worktrees, '..', 'named.git');
        await bareWithHook(repo.repo, bare, marker);
        const redirected = await pushWithConfigChanged(wt, 'origin', () => git(repo.repo, 'config', `remote.${url}.url`, bare));
        assert.equal(existsSync(marker), false, `a late remote.<URL>.url took the push to a local repository whose hook ran: ${String(redirected)}`);
        git(repo.repo, 'config', '--unset', `remote.${url}.url`);
        const viaProxy = await pushWithConfigChanged(wt, 'origin', () => git(repo.repo, 'config', `remote.${url}.proxy`, proxyUrl));
        assert.equal(proxied(), 0, `a late remote.<URL>.proxy was used: ${String(viaProxy)}`);
      } finally {
        await close();
      }
    });
  });

  test("attack: an http.proxy the repository's config gets while the push reads the person's http settings is not used", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const { url, proxyUrl, proxied, close } = await forgeAndProxy();
      const start = gitStarter.start;
      try {
        git(repo.repo, 'remote', 'add', 'origin', url);
        const wt = addWorktree(repo, 'p10h');
        await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
        await commitChanges(wt, 'to push', noHooks);
        gitStarter.start = (request, handlers) => {
          if (request.args.includes('--get-urlmatch')) git(repo.repo, 'config', 'http.proxy', proxyUrl);
          return start(request, handlers);
        };
        const answer = await pushChanges(wt, 'origin', noHooks).then(
          () => undefined,
          (error: unknown) => error,
        );
        assert.equal(proxied(), 0, `the repository's late http.proxy was pinned as the person's: ${String(answer)}`);
      } finally {
        gitStarter.start = start;
        await close();
      }
    });
  });

  test("attack: a push URL only the worktree's checkout reads (includeIf onbranch) still gets the hook-free receive-pack", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const bare = join(repo.worktrees, '..', 'remote.git');
      const marker = join(repo.worktrees, '..', 'onbranch-hook-ran');
      await bareWithHook(repo.repo, bare, marker);
      // Seen from the repository's own checkout, origin is far away; on the conversation's branch it is the bare repository.
      git(repo.repo, 'remote', 'add', 'origin', 'https://127.0.0.1:9/x.git');
      const wt = addWorktree(repo, 'p8');
      const include = join(repo.worktrees, '..', 'onbranch.inc');
      await writeFile(include, `[remote "origin"]\n\tpushurl = ${bare}\n`);
      git(repo.repo, 'config', `includeIf.onbranch:${wt.branch}.path`, include);
      await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
      const { commit } = await commitChanges(wt, 'to push', noHooks);
      await pushChanges(wt, 'origin', noHooks);
      assert.equal(existsSync(marker), false, "the local remote's pre-receive hook ran");
      assert.equal(git(bare, 'rev-parse', `refs/heads/${wt.branch}`).trim(), commit, 'pushed to the URL the worktree reads');
    });
  });

  test('attack: push.recurseSubmodules=on-demand does not push a submodule, whose own config (core.sshCommand) the transport check never reads; the branch is pushed', async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const marker = join(repo.worktrees, '..', 'submodule-ssh-ran');
      const library = join(repo.worktrees, '..', 'library');
      await gitRepository(library, { 's.txt': 's\n' });
      git(repo.repo, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', library, 'lib');
      git(repo.repo, 'commit', '-q', '-m', 'add lib');
      const bare = join(repo.worktrees, '..', 'remote.git');
      git(repo.repo, 'init', '-q', '--bare', bare);
      git(repo.repo, 'remote', 'add', 'origin', bare);
      git(repo.repo, 'config', 'push.recurseSubmodules', 'on-demand');
      // The agent's worktree with the submodule checked out (its shell may run `git submodule update`), a
      // new commit in it, and the submodule's own config naming an ssh remote and an ssh program.
      const wt = addWorktree(repo, 'p8');
      git(wt.path, '-c', 'protocol.file.allow=always', 'submodule', 'update', '-q', '--init');
      const sub = join(wt.path, 'lib');
      // (A branch of the pushed branch's name: git pushes the submodule with the same refspec.)
      git(sub, 'checkout', '-q', '-b', wt.branch);
      await writeFiles(sub, { 's.txt': 'changed\n' });
      git(sub, 'commit', '-q', '-am', 'submodule change');
      git(sub, 'remote', 'set-url', 'origin', 'ssh://127.0.0.1:9/library.git');
      git(sub, 'config', 'core.sshCommand', `touch '${marker}'; false`);
      const { commit } = await commitChanges(wt, 'bump lib', noHooks);
      await pushChanges(wt, 'origin', noHooks).catch(() => undefined);
      assert.equal(existsSync(marker), false, "the submodule's core.sshCommand ran on push");
      assert.equal(git(bare, 'rev-parse', `refs/heads/${wt.branch}`).trim(), commit, 'the branch was pushed alone');
    });
  });

  test('attack: a local non-bare remote set to updateInstead on the pushed branch checks nothing out there (its fsmonitor, filters, push-to-checkout hook): refused, nothing runs', async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const wt = addWorktree(repo, 'p6');
      await writeFiles(wt.path, { 'a.txt': 'pushed\n', 'b.x': 'b\n' });
      await commitChanges(wt, 'to push', noHooks);
      const remoteRepo = join(repo.worktrees, '..', 'remote-tree');
      const marker = join(repo.worktrees, '..', 'remote-checkout-ran');
      git(repo.repo, 'clone', '-q', repo.repo, remoteRepo);
      git(remoteRepo, 'checkout', '-q', '-b', wt.branch);
      git(remoteRepo, 'config', 'receive.denyCurrentBranch', 'updateInstead');
      git(remoteRepo, 'config', 'core.fsmonitor', `touch '${marker}'; true`);
      git(remoteRepo, 'config', 'filter.evil.smudge', `touch '${marker}'; cat`);
      await writeFiles(remoteRepo, { '.git/info/attributes': '* filter=evil\n' });
      git(repo.repo, 'remote', 'add', 'tree', remoteRepo);
      const before = git(remoteRepo, 'rev-parse', 'HEAD').trim();
      const refused = await pushChanges(wt, 'tree', noHooks).then(
        () => undefined,
        (error: unknown) => error,
      );
      assert.equal(existsSync(marker), false, "the remote's fsmonitor or filter ran on a push");
      assert.ok(refused instanceof ServiceError && refused.code === 'conflict', String(refused));
      assert.equal(git(remoteRepo, 'rev-parse', 'HEAD').trim(), before, 'nothing pushed');
    });
  });

  test("attack: a credential helper the repository's config names with a place of its choosing (store --file=<a file in the worktree>) is refused on push; the person's credential is not written there", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const served = join(repo.worktrees, '..', 'served');
      git(repo.repo, 'init', '-q', '--bare', join(served, 'remote.git'));
      const server = await gitOverHttp(served);
      // The person's own helper (their global config) answers the remote's 401 with their credential.
      git(repo.repo, 'config', '--global', 'credential.helper', '!f() { test "$1" = get && { echo username=person; echo password=SECRET-PASS; }; }; f');
      try {
        git(repo.repo, 'remote', 'add', 'origin', `${server.url}/remote.git`);
        const wt = addWorktree(repo, 'p9');
        await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
        const { commit } = await commitChanges(wt, 'to push', noHooks);
        const leak = join(wt.path, 'leak');
        for (const helper of [`store --file=${leak}`, `cache --socket=${leak}`]) {
          git(repo.repo, 'config', 'credential.helper', helper);
          const refused = await pushChanges(wt, 'origin', noHooks).then(
            () => undefined,
            (error: unknown) => error,
          );
          assert.equal(existsSync(leak), false, `the person's credential was written where the repository said (${helper})`);
          assert.ok(refused instanceof ServiceError && refused.code === 'conflict', String(refused));
        }
        // Without it the push goes through with the person's own helper.
        git(repo.repo, 'config', '--unset-all', 'credential.helper');
        await pushChanges(wt, 'origin', noHooks);
        assert.equal(git(join(served, 'remote.git'), 'rev-parse', `refs/heads/${wt.branch}`).trim(), commit);
      } finally {
        git(repo.repo, 'config', '--global', '--unset-all', 'credential.helper');
        await server.close();
      }
    });
  });

  test("attack: the repository's own config cannot send the person's credential to a server git does not check (http.sslVerify off, curloptResolve, a proxy, its own CA): refused, no credential sent", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const { port, certFile, heard, close } = await credentialRecordingForge(join(repo.worktrees, '..', 'certs'));
      // The person's own helper holds their credential for forge.example.
      git(repo.repo, 'config', '--global', 'credential.helper', '!f() { test "$1" = get && { echo username=person; echo password=SECRET-PASS; }; }; f');
      try {
        git(repo.repo, 'remote', 'add', 'origin', `https://forge.example:${port}/me/app.git`);
        const wt = addWorktree(repo, 'p10');
        await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
        await commitChanges(wt, 'to push', noHooks);
        const resolve = `forge.example:${port}:127.0.0.1`;
        const settings: [string, string][][] = [
          [
            ['http.curloptResolve', resolve],
            ['http.sslVerify', 'false'],
          ],
          [
            [`http.https://forge.example:${port}/.curloptResolve`, resolve],
            ['http.sslCAInfo', certFile],
          ],
          [['http.proxy', 'http://127.0.0.1:9']],
          [['remote.origin.proxy', 'http://127.0.0.1:9']],
        ];
        for (const set of settings) {
          for (const [name, value] of set) git(repo.repo, 'config', name, value);
          const refused = await pushChanges(wt, 'origin', noHooks).then(
            () => undefined,
            (error: unknown) => error,
          );
          assert.deepEqual(heard, [], `the credential reached the server with ${set.map(([name]) => name).join(', ')}`);
          assert.ok(refused instanceof ServiceError && refused.code === 'conflict' && /config/.test(refused.message), String(refused));
          for (const [name] of set) git(repo.repo, 'config', '--unset-all', name);
        }
      } finally {
        git(repo.repo, 'config', '--global', '--unset-all', 'credential.helper');
        await close();
      }
    });
  });

  test("the person's own `[http] sslVerify` written with no value (git reads it as true) keeps certificate checks on for the push: an unknown certificate is refused, no credential sent", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const { port, heard, close } = await credentialRecordingForge(join(repo.worktrees, '..', 'certs-bare'));
      const globalFile = join(isolation.home, '.gitconfig');
      const before = await readFile(globalFile, 'utf8');
      // The person's own settings: their helper, the forge's address, and a valueless sslVerify.
      git(repo.repo, 'config', '--global', 'credential.helper', '!f() { test "$1" = get && { echo username=person; echo password=SECRET-PASS; }; }; f');
      git(repo.repo, 'config', '--global', 'http.curloptResolve', `forge.example:${port}:127.0.0.1`);
      await writeFile(globalFile, `${await readFile(globalFile, 'utf8')}[http]\n\tsslVerify\n`);
      try {
        git(repo.repo, 'remote', 'add', 'origin', `https://forge.example:${port}/me/app.git`);
        const wt = addWorktree(repo, 'p10v');
        await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
        await commitChanges(wt, 'to push', noHooks);
        const refused = await pushChanges(wt, 'origin', noHooks).then(
          () => undefined,
          (error: unknown) => error,
        );
        assert.deepEqual(heard, [], 'the credential reached a server whose certificate nobody checked');
        assert.ok(refused instanceof ServiceError && /certificate|SSL/i.test(refused.message), String(refused));
      } finally {
        await writeFile(globalFile, before);
        await close();
      }
    });
  });

  test("attack: a remote the repository's config names like an option (--receive-pack=<command>) is refused; nothing runs, nothing is pushed", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const bare = join(repo.worktrees, '..', 'remote.git');
      const marker = join(repo.worktrees, '..', 'receive-pack-ran');
      git(repo.repo, 'init', '-q', '--bare', bare);
      const name = `--receive-pack=touch '${marker}'; git-receive-pack`;
      await writeFile(join(repo.repo, '.git', 'config'), `${await readFile(join(repo.repo, '.git', 'config'), 'utf8')}[remote "${name}"]\n\turl = ${bare}\n`);
      assert.ok(git(repo.repo, 'remote').split('\n').includes(name), 'git lists the remote');
      const wt = addWorktree(repo, 'p2');
      await writeFiles(wt.path, { 'a.txt': 'pushed\n' });
      await commitChanges(wt, 'to push', noHooks);
      await assert.rejects(pushChanges(wt, name, noHooks), (e: unknown) => e instanceof ServiceError && e.code === 'invalid_request' && /option/.test(e.message));
      assert.equal(existsSync(marker), false, 'the command in the remote name ran');
      assert.equal(git(bare, 'branch', '--list').trim(), '');
    });
  });

  test('compare URLs for GitHub, GitLab and Bitbucket in https and ssh forms, without credentials', () => {
    assert.equal(compareUrlOf('https://x-token:ghp_secret@github.com/me/app.git', 'assistant/fix-1', 'main'), 'https://github.com/me/app/compare/main...assistant%2Ffix-1?expand=1');
    assert.equal(compareUrlOf('git@github.com:me/app.git', 'b', null), 'https://github.com/me/app/compare/b?expand=1');
    assert.equal(compareUrlOf('ssh://git@github.com:22/me/app', 'b', 'main'), 'https://github.com/me/app/compare/main...b?expand=1');
    assert.equal(
      compareUrlOf('git@gitlab.com:group/sub/app.git', 'b', 'main'),
      'https://gitlab.com/group/sub/app/-/merge_requests/new?merge_request%5Bsource_branch%5D=b&merge_request%5Btarget_branch%5D=main',
    );
    assert.equal(compareUrlOf('https://me@bitbucket.org/team/app.git', 'b', 'main'), 'https://bitbucket.org/team/app/pull-requests/new?source=b&dest=main&t=1');
    assert.equal(compareUrlOf('https://git.example.com/me/app.git', 'b', 'main'), null);
    assert.equal(compareUrlOf('/srv/git/app.git', 'b', 'main'), null);
  });

  test('discard removes the worktree and its branch; unlandedWork says what would be lost', async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const wt = addWorktree(repo, 'd1');
      await writeFiles(wt.path, { 'a.txt': 'b\n' });
      await commitChanges(wt, 'x', noHooks);
      await writeFiles(wt.path, { 'n.txt': 'n\n', 'a.txt': 'c\n' });
      assert.deepEqual(await unlandedWork(wt), { commits: 1, uncommittedFiles: 2 });
      await discardWorktree(wt);
      assert.equal(existsSync(wt.path), false);
      assert.equal(git(repo.repo, 'branch', '--list', wt.branch).trim(), '');
      // (Its path, not /d1/: the temp folder's random name may hold those letters.)
      assert.equal(git(repo.repo, 'worktree', 'list', '--porcelain').includes(`worktree ${wt.path}\n`), false);
    });
  });
});

describe('a nested repository committed as a gitlink (an unpacked archive, a folder the agent made a repository)', () => {
  /**
   * A repository at `dir` whose own config names a clean filter for every file, and whose file's stat
   * no longer matches its index: a `git status` inside it (which git runs to see whether a submodule's
   * files changed) runs the filter.
   */
  async function nestedWithFilter(dir: string): Promise<void> {
    await writeFiles(dir, { '.gitattributes': '* filter=evil\n', 'a.txt': 'vendored\n' });
    git(dir, 'init', '-q');
    git(dir, 'add', '.');
    git(dir, 'commit', '-q', '-m', 'vendored');
  }
  async function armFilter(dir: string, marker: string): Promise<void> {
    git(dir, 'config', 'filter.evil.clean', `touch '${marker}'; cat`);
    const later = new Date(Date.now() + 60_000);
    await utimes(join(dir, 'a.txt'), later, later);
  }

  test("attack: get_changes, land_changes and discard's check run none of its own config's programs (its clean filter); the gitlink is still listed and landed", async () => {
    await withRepo({ 'a.txt': 'a\n' }, async (repo) => {
      const marker = join(repo.worktrees, '..', 'nested-filter-ran');
      // In the user's repository (land's status there), and in the worktree (get_changes after each turn).
      await nestedWithFilter(join(repo.repo, 'vendor', 'lib'));
      git(repo.repo, 'add', 'vendor/lib');
      git(repo.repo, 'commit', '-q', '-m', 'vendor lib');
      const wt = addWorktree(repo, 'n1');
      await nestedWithFilter(join(wt.path, 'tools'));
      git(wt.path, 'add', 'tools');
      git(wt.path, 'commit', '-q', '-m', 'tools');
      await armFilter(join(repo.repo, 'vendor', 'lib'), marker);
      await armFilter(join(wt.path, 'tools'), marker);

      const changes = await changesOf(wt);
      assert.equal(existsSync(marker), false, "the nested repository's filter ran on get_changes");
      assert.ok(
        changes.files.some((f) => f.path === 'tools'),
        'the gitlink is listed',
      );
      assert.equal((await unlandedWork(wt)).commits, 1);
      assert.equal(existsSync(marker), false, "the nested repository's filter ran on discard's look at what would be lost");
      const landed = await landChanges(wt, 'merge', noHooks);
      assert.equal(existsSync(marker), false, "the nested repository's filter ran on land_changes");
      assert.equal(landed.landed, true, JSON.stringify(landed.blocked));
    });
  });
});

describe('a repository using git LFS (filters are off in our git: refused by name rather than the whole file stored)', () => {
  const attributes = '*.bin filter=lfs diff=lfs merge=lfs -text\n';
  const pointer = `version https://git-lfs.github.com/spec/v1\noid sha256:${'a'.repeat(64)}\nsize 3000\n`;
  const large = Buffer.alloc(3000, 7);

  test('commit_changes refuses a changed or new LFS file that is not a pointer, naming it; nothing committed or staged', async () => {
    await withRepo({ '.gitattributes': attributes, 'model.bin': pointer, 'notes.txt': 'a\n' }, async (repo) => {
      const wt = addWorktree(repo, 'lfs1');
      const head = git(wt.path, 'rev-parse', 'HEAD');
      await writeFiles(wt.path, { 'model.bin': large, 'new.bin': large, 'notes.txt': 'b\n' });
      await assert.rejects(
        commitChanges(wt, 'agent work', noHooks),
        (e: unknown) => e instanceof ServiceError && e.code === 'conflict' && /model\.bin, new\.bin/.test(e.message) && /LFS/.test(e.message),
      );
      assert.equal(git(wt.path, 'rev-parse', 'HEAD'), head);
      assert.equal(git(wt.path, 'diff', '--cached', '--name-only'), '');
      assert.deepEqual(await readFile(join(wt.path, 'model.bin')), large, 'the working tree keeps the change');
      // The pointer left as it was (and a new file given to LFS by a .gitattributes of the change itself: refused too).
      await writeFiles(wt.path, { 'model.bin': pointer });
      await rm(join(wt.path, 'new.bin'));
      await writeFiles(wt.path, { '.gitattributes': `${attributes}*.dat filter=lfs\n`, 'weights.dat': large });
      await assert.rejects(commitChanges(wt, 'agent work', noHooks), (e: unknown) => e instanceof ServiceError && e.code === 'conflict' && /weights\.dat/.test(e.message));
      await rm(join(wt.path, 'weights.dat'));
      const { commit } = await commitChanges(wt, 'notes only', noHooks);
      assert.equal(git(wt.path, 'show', '--name-only', '--format=', commit).trim().split('\n').sort().join(','), '.gitattributes,notes.txt');
    });
  });

  test('small LFS files are read by one git for all of them, not one each: pointers pass, small raw files (text or not) are named', async () => {
    const names = Array.from({ length: 8 }, (_, i) => `p${i}.bin`);
    await withRepo({ '.gitattributes': attributes, 'notes.txt': 'a\n' }, async (repo) => {
      const wt = addWorktree(repo, 'lfs3');
      const pointers = Object.fromEntries(names.map((name, i) => [name, pointer.replace('size 3000', `size ${3000 + i}`)]));
      // A small raw file of bytes that are not UTF-8 before the pointers, and a text one among them: neither moves where the next one is read.
      // An empty file is not refused: git-lfs stores it as it is.
      await writeFiles(wt.path, { ...pointers, 'a-raw.bin': Buffer.from([0xff, 0xfe, 0x80, 0x0a, 0xc3]), 'p4-raw.bin': 'not a pointer\n', 'empty.bin': '' });
      const runs = await gitRuns(() =>
        assert.rejects(commitChanges(wt, 'agent work', noHooks), (e: unknown) => e instanceof ServiceError && e.code === 'conflict' && /keeps a-raw\.bin, p4-raw\.bin in git LFS/.test(e.message)),
      );
      assert.equal(runs.filter((args) => args.includes('cat-file')).length, 2, runs.map((a) => a.join(' ')).join('\n'));
      await rm(join(wt.path, 'a-raw.bin'));
      await rm(join(wt.path, 'p4-raw.bin'));
      const { commit } = await commitChanges(wt, 'pointers only', noHooks);
      assert.equal(git(wt.path, 'show', '--name-only', '--format=', commit).trim().split('\n').length, names.length + 1);
    });
  });

  test("small LFS files whose contents together pass git's 64 MiB output cap are all read (failed before: the check failed with git's overflow, not a refusal naming them)", async () => {
    await withRepo({ '.gitattributes': attributes, 'notes.txt': 'a\n' }, async (repo) => {
      const wt = addWorktree(repo, 'lfs-many');
      await writeFiles(wt.path, { 'm.bin': Buffer.alloc(1_020, 'r') });
      git(wt.path, 'add', 'm.bin');
      // One small raw file named 66,000 times: its content is read once for each, 70 MiB of answers, as from that many files (fast to make).
      const paths = Array.from({ length: 66_000 }, () => 'm.bin');
      await assert.rejects(
        refuseRawLfsFiles(wt.path, '', paths),
        (e: unknown) => e instanceof ServiceError && e.code === 'conflict' && /keeps m\.bin, m\.bin, .* and 65990 more in git LFS/.test(e.message),
      );
    });
  });

  test('with git-lfs installed: the pointers it writes pass and the file it would have stored as a pointer is refused', { skip: !hasGitLfs() && 'git-lfs is not installed' }, async () => {
    await withRepo({ '.gitattributes': attributes, 'notes.txt': 'a\n' }, async (repo) => {
      const wt = addWorktree(repo, 'lfs4');
      await writeFiles(wt.path, { 'made.src': large, 'other.src': Buffer.alloc(500, 3) });
      // git lfs's own pointers for two files, as a checkout by a git with LFS leaves them.
      await writeFiles(wt.path, { 'made.bin': git(wt.path, 'lfs', 'pointer', '--file=made.src'), 'other.bin': git(wt.path, 'lfs', 'pointer', '--file=other.src') });
      await rm(join(wt.path, 'made.src'));
      await rm(join(wt.path, 'other.src'));
      await writeFiles(wt.path, { 'whole.bin': Buffer.alloc(500, 3) });
      await assert.rejects(commitChanges(wt, 'agent work', noHooks), (e: unknown) => e instanceof ServiceError && e.code === 'conflict' && /keeps whole\.bin in git LFS/.test(e.message));
      await rm(join(wt.path, 'whole.bin'));
      const { commit } = await commitChanges(wt, 'pointers', noHooks);
      assert.equal(git(wt.path, 'show', '--name-only', '--format=', commit).trim().split('\n').sort().join(','), 'made.bin,other.bin');
    });
  });

  test('land_changes refuses a branch that stored an LFS file whole (committed by other means), naming it; the workspace unchanged', async () => {
    await withRepo({ '.gitattributes': attributes, 'model.bin': pointer }, async (repo) => {
      const wt = addWorktree(repo, 'lfs2');
      await writeFiles(wt.path, { 'model.bin': large });
      git(wt.path, 'commit', '-q', '-am', 'the whole file, by a git without LFS');
      const before = snapshot(repo.repo);
      await assert.rejects(landChanges(wt, 'merge', noHooks), (e: unknown) => e instanceof ServiceError && e.code === 'conflict' && /model\.bin/.test(e.message));
      assert.deepEqual(snapshot(repo.repo), before);
    });
  });

  test('attack: a deleted LFS file named with a newline does not shift the check past a raw file landed beside it', async () => {
    // git echoes a missing path back as given, so "a<newline>b.bin" gone at the tip answered two lines.
    await withRepo({ '.gitattributes': attributes, 'a\nb.bin': pointer }, async (repo) => {
      const wt = addWorktree(repo, 'lfs5');
      git(wt.path, 'rm', '-q', '--', 'a\nb.bin');
      await writeFiles(wt.path, { 'c.bin': large });
      git(wt.path, 'add', 'c.bin');
      git(wt.path, 'commit', '-q', '-m', 'a pointer gone, a whole file in, by a git without LFS');
      const before = snapshot(repo.repo);
      await assert.rejects(landChanges(wt, 'merge', noHooks), (e: unknown) => e instanceof ServiceError && e.code === 'conflict' && /c\.bin/.test(e.message));
      assert.deepEqual(snapshot(repo.repo), before);
    });
  });
});

/**
 * Git's smart HTTP on 127.0.0.1 (`git http-backend` behind Basic authentication, any credential taken):
 * a remote that asks for a password, as a hosted one does.
 */
async function gitOverHttp(root: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((request, response) => {
    if (!request.headers.authorization) {
      response.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' }).end();
      return;
    }
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const backend = childProcess.spawn('git', ['http-backend'], {
      env: {
        ...process.env,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: url.pathname,
        REQUEST_METHOD: request.method ?? 'GET',
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: request.headers['content-type'] ?? '',
        ...(request.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: request.headers['content-encoding'] } : {}),
        REMOTE_USER: 'person',
        REMOTE_ADDR: '127.0.0.1',
      },
    });
    request.pipe(backend.stdin);
    const chunks: Buffer[] = [];
    backend.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    backend.on('close', () => {
      // A CGI answer: its headers (a Status: line among them), a blank line, the body.
      const out = Buffer.concat(chunks);
      const end = out.indexOf('\r\n\r\n');
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of out.subarray(0, end).toString().split('\r\n')) {
        const colon = line.indexOf(': ');
        if (/^status$/i.test(line.slice(0, colon))) status = Number(line.slice(colon + 2, colon + 5));
        else headers[line.slice(0, colon)] = line.slice(colon + 2);
      }
      response.writeHead(status, headers).end(out.subarray(end + 4));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
