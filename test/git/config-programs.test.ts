import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, cp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { changesOf } from '../../src/git/changes';
import { commitChanges } from '../../src/git/commit';
import { landChanges } from '../../src/git/land';
import { keepsDriverReading } from '../../src/git/run-git';
import { addWorktree, git, isolateGitConfig, makeRepo, writeFiles, type TestRepo } from '../helpers/git-repo';

// A repository's config is one of its files (an unpacked archive's .git/config, a file it includes, a
// worktree's config.worktree): no program it names may run from the git review runs (docs/protocol.md,
// "Worktrees", "Git the service runs"). Each test names a key git would run a program from, points it
// at a script that leaves a marker, shows that a plain git runs it (the test is not vacuous), and then
// that the service's get_changes / commit / land does not, and still does its work.

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
const noHooks = { allowHooks: false };

let isolation: Awaited<ReturnType<typeof isolateGitConfig>>;
before(async () => {
  isolation = await isolateGitConfig();
});
after(() => isolation.cleanup());

interface Rig {
  repo: TestRepo;
  /** Written by the script when git runs it. */
  marker: string;
  /** The script a key names: records that it ran, then passes its input through (a driver, a gpg, a pager). */
  script: string;
}

async function withRig(files: Record<string, string>, body: (rig: Rig) => Promise<void>): Promise<void> {
  const repo = await makeRepo(files);
  const marker = join(repo.worktrees, '..', 'program-ran');
  const script = join(repo.worktrees, '..', 'program.sh');
  await writeFile(script, `#!/bin/sh\necho "$@" >> '${marker}'\nexit 0\n`);
  await chmod(script, 0o755);
  try {
    await body({ repo, marker, script });
  } finally {
    await repo.cleanup();
  }
}

/** The branch and the workspace change different lines of app.txt: a clean three-way merge, which goes through the file's merge driver. */
async function divergedOnOneFile(rig: Rig, id: string) {
  const wt = addWorktree(rig.repo, id);
  await writeFiles(wt.path, { 'app.txt': lines(20).replace('line 3\n', 'line 3 by the branch\n') });
  await commitChanges(wt, 'branch edit', noHooks);
  await writeFiles(rig.repo.repo, { 'app.txt': lines(20).replace('line 17\n', 'line 17 by the user\n') });
  git(rig.repo.repo, 'commit', '-q', '-am', 'user edit');
  return wt;
}

describe('attack: a merge driver the repository config names (.gitattributes merge=) does not run when landing', () => {
  for (const method of ['merge', 'rebase'] as const) {
    test(`${method}: git merge-tree / apply --3way use git's own merge; the land still merges both edits`, async () => {
      await withRig({ 'app.txt': lines(20), '.gitattributes': '*.txt merge=evil\n' }, async (rig) => {
        // Defined in a file the repository's config includes: include.path is followed as git follows it.
        const included = join(rig.repo.repo, '.git', 'more-config');
        await writeFile(included, `[merge "evil"]\n\tdriver = '${rig.script}' %O %A %B\n`);
        git(rig.repo.repo, 'config', 'include.path', included);
        const wt = await divergedOnOneFile(rig, `md-${method}`);

        git(rig.repo.repo, 'merge-tree', '--write-tree', 'HEAD', wt.branch);
        assert.equal(existsSync(rig.marker), true, 'a plain git runs the merge driver');
        await rm(rig.marker);

        const landed = await landChanges(wt, method, noHooks);
        assert.equal(existsSync(rig.marker), false, 'the merge driver the config names ran');
        assert.equal(landed.landed, true, JSON.stringify(landed.blocked));
        const merged = await readFile(join(rig.repo.repo, 'app.txt'), 'utf8');
        assert.match(merged, /line 3 by the branch/);
        assert.match(merged, /line 17 by the user/);
      });
    });
  }

  test('a real conflict under such a driver is still a conflict, nothing changed', async () => {
    await withRig({ 'app.txt': lines(20), '.gitattributes': '*.txt merge=evil\n' }, async (rig) => {
      git(rig.repo.repo, 'config', 'merge.evil.driver', `'${rig.script}' %O %A %B`);
      const wt = addWorktree(rig.repo, 'md-conflict');
      await writeFiles(wt.path, { 'app.txt': lines(20).replace('line 3\n', 'line 3 by the branch\n') });
      await commitChanges(wt, 'branch edit', noHooks);
      await writeFiles(rig.repo.repo, { 'app.txt': lines(20).replace('line 3\n', 'line 3 by the user\n') });
      git(rig.repo.repo, 'commit', '-q', '-am', 'user edit');
      const head = git(rig.repo.repo, 'rev-parse', 'HEAD');
      const refused = await landChanges(wt, 'merge', noHooks);
      assert.equal(existsSync(rig.marker), false, 'the merge driver the config names ran');
      assert.equal(refused.blocked?.reason, 'conflict');
      assert.deepEqual(refused.blocked?.files, ['app.txt']);
      assert.equal(git(rig.repo.repo, 'rev-parse', 'HEAD'), head);
    });
  });
});

describe('attack: a signing program the repository config names does not run', () => {
  test('commit_changes with commit.gpgSign and gpg.program: no program runs, the commit is made (unsigned)', async () => {
    await withRig({ 'a.txt': 'a\n' }, async (rig) => {
      git(rig.repo.repo, 'config', 'commit.gpgSign', 'true');
      git(rig.repo.repo, 'config', 'gpg.program', rig.script);
      const wt = addWorktree(rig.repo, 'sign');
      await writeFiles(wt.path, { 'a.txt': 'b\n' });
      const made = await commitChanges(wt, 'agent work', noHooks).catch((error: unknown) => error);
      assert.equal(existsSync(rig.marker), false, 'gpg.program ran');
      const { commit } = made as { commit: string };
      assert.equal(git(wt.path, 'rev-parse', 'HEAD').trim(), commit);
      assert.doesNotMatch(git(wt.path, 'cat-file', 'commit', commit), /gpgsig/);
    });
  });

  test('ssh signing (gpg.format ssh, gpg.ssh.program): no program runs', async () => {
    await withRig({ 'a.txt': 'a\n' }, async (rig) => {
      git(rig.repo.repo, 'config', 'commit.gpgSign', 'true');
      git(rig.repo.repo, 'config', 'gpg.format', 'ssh');
      git(rig.repo.repo, 'config', 'user.signingKey', 'key::ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHvQ0QJ7bB0y8ZbbD3Xo5+TN2b9FZcQ2wJ1Z2x8yq4sE');
      git(rig.repo.repo, 'config', 'gpg.ssh.program', rig.script);
      const wt = addWorktree(rig.repo, 'sshsign');
      await writeFiles(wt.path, { 'a.txt': 'b\n' });
      await commitChanges(wt, 'agent work', noHooks).catch(() => undefined);
      assert.equal(existsSync(rig.marker), false, 'gpg.ssh.program ran');
      assert.equal(git(wt.path, 'log', '-1', '--format=%s').trim(), 'agent work');
    });
  });

  test('log.showSignature with a commit carrying a signature: the squash message is read without verifying it', async () => {
    await withRig({ 'a.txt': 'a\n' }, async (rig) => {
      const wt = addWorktree(rig.repo, 'showsig');
      await writeFiles(wt.path, { 'a.txt': 'b\n' });
      const { commit } = await commitChanges(wt, 'signed work', noHooks);
      // The branch's commit, rewritten with a signature header (any bytes: git hands them to gpg.program to verify).
      const signed = git(wt.path, 'cat-file', 'commit', commit).replace(/^(committer .*)$/m, '$1\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----');
      const id = execFileSync('git', ['hash-object', '-t', 'commit', '-w', '--stdin'], { cwd: wt.path, input: signed }).toString().trim();
      git(wt.path, 'update-ref', `refs/heads/${wt.branch}`, id);
      git(rig.repo.repo, 'config', 'log.showSignature', 'true');
      git(rig.repo.repo, 'config', 'gpg.program', rig.script);

      const landed = await landChanges(wt, 'squash', noHooks);
      assert.equal(existsSync(rig.marker), false, 'gpg.program ran to verify');
      assert.equal(landed.landed, true, JSON.stringify(landed.blocked));
      assert.equal(git(rig.repo.repo, 'log', '-1', '--no-show-signature', '--format=%s').trim(), 'signed work');
    });
  });
});

describe("diff drivers (regression: review's diffs pass --no-ext-diff --no-textconv)", () => {
  test('diff.external, diff.<driver>.command and textconv do not run from get_changes', async () => {
    await withRig({ 'a.txt': 'a\n', '.gitattributes': '*.txt diff=evil\n' }, async (rig) => {
      git(rig.repo.repo, 'config', 'diff.external', rig.script);
      git(rig.repo.repo, 'config', 'diff.evil.command', rig.script);
      git(rig.repo.repo, 'config', 'diff.evil.textconv', rig.script);
      const wt = addWorktree(rig.repo, 'diffdrv');
      await writeFiles(wt.path, { 'a.txt': 'b\n' });
      const changes = await changesOf(wt);
      assert.equal(existsSync(rig.marker), false, 'a diff driver ran');
      assert.deepEqual(
        changes.files[0].hunks.flatMap((h) => h.lines),
        ['-a', '+b'],
      );
    });
  });
});

describe('attack: a filter added after the drivers were read once (the reading is kept until a file it came from changes) does not run from get_changes', () => {
  // The clean filter git would run on the changed file's content, named in four places the service read
  // before: the repository's config, a file it includes (written without touching the includer), the
  // worktree's config.worktree, the person's ~/.gitconfig; and a whole other common directory (a copy of
  // the repository's .git with the filter in its config) the worktree's `commondir` file is pointed at.
  const places = ['the repository config', 'an included file', 'config.worktree', '~/.gitconfig', 'a common directory swapped'] as const;
  for (const place of places) {
    test(place, async () => {
      await withRig({ 'a.txt': 'a\n', '.gitattributes': '*.txt filter=evil\n' }, async (rig) => {
        const included = join(rig.repo.worktrees, '..', 'included.cfg');
        await writeFile(included, '[core]\n\tquotePath = true\n');
        git(rig.repo.repo, 'config', 'include.path', included);
        const wt = addWorktree(rig.repo, `kept-${places.indexOf(place)}`);
        if (place === 'config.worktree') git(wt.path, 'config', 'extensions.worktreeConfig', 'true');
        await writeFiles(wt.path, { 'a.txt': 'b\n' });
        // A reading is kept only once the files it came from are a second old (one changed while git read may not be in it).
        await new Promise((resolve) => setTimeout(resolve, 1_100));
        await changesOf(wt);
        assert.equal(keepsDriverReading(wt.path), true, 'the reading is kept (the test is not vacuous)');
        await writeFiles(wt.path, { 'a.txt': 'c\n' });
        const clean = `'${rig.script}'; cat`;
        if (place === 'the repository config') git(rig.repo.repo, 'config', 'filter.evil.clean', clean);
        else if (place === 'an included file') await writeFile(included, `[filter "evil"]\n\tclean = ${clean}\n`);
        else if (place === 'config.worktree') git(wt.path, 'config', '--worktree', 'filter.evil.clean', clean);
        else if (place === 'a common directory swapped') {
          const other = join(rig.repo.worktrees, '..', 'other-common');
          await cp(join(rig.repo.repo, '.git'), other, { recursive: true });
          git(other, 'config', 'filter.evil.clean', clean);
          await writeFile(join(rig.repo.repo, '.git', 'worktrees', `kept-${places.indexOf(place)}`, 'commondir'), `${other}\n`);
        } else git(rig.repo.repo, 'config', '--global', 'filter.evil.clean', clean);
        // Not vacuous: a plain git runs it.
        git(wt.path, 'diff', 'HEAD');
        assert.equal(existsSync(rig.marker), true, 'a plain git runs the filter');
        await rm(rig.marker);
        assert.equal(keepsDriverReading(wt.path), false, 'the change is seen');
        const changes = await changesOf(wt);
        assert.equal(existsSync(rig.marker), false, `the filter named in ${place} ran`);
        assert.deepEqual(
          changes.files[0].hunks.flatMap((h) => h.lines),
          ['-a', '+c'],
        );
        if (place === '~/.gitconfig') git(rig.repo.repo, 'config', '--global', '--unset', 'filter.evil.clean');
      });
    });
  }
});
