import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import fsPromises, { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { InstructionFiles } from '../../src/agent/prompt/instruction-files';
import { tempDir } from '../helpers/temp';

// get_config answers the roots' instruction files on every call: the answer is remembered while the
// folders they live in are unchanged, and every change finished before a call is seen by that call
// (no waiting: the cache must never be the reason a user sees an old file).

const texts = async (files: InstructionFiles, roots: string[]) => (await files.inForce(roots)).map((file) => `${file.scope}:${file.path}=${file.text.trim()}`);

test("the roots' answer is remembered: a second call looks at nothing on disk", async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  await writeFile(join(dir, 'AGENTS.md'), 'root rules\n');
  const files = new InstructionFiles(undefined);
  assert.deepEqual(await texts(files, [dir]), ['project:AGENTS.md=root rules']);
  const lstat = t.mock.method(fsPromises, 'lstat');
  assert.deepEqual(await texts(files, [dir]), ['project:AGENTS.md=root rules']);
  assert.equal(lstat.mock.callCount(), 0);
});

test('every change where the files live is seen by the next call, at once', async (t) => {
  const { dir: root, cleanup } = await tempDir();
  t.after(cleanup);
  const { dir: user, cleanup: cleanupUser } = await tempDir();
  t.after(cleanupUser);
  const files = new InstructionFiles(user);
  assert.deepEqual(await texts(files, [root]), []);
  await writeFile(join(root, 'AGENTS.md'), 'one\n');
  assert.deepEqual(await texts(files, [root]), ['project:AGENTS.md=one']);
  await writeFile(join(root, 'AGENTS.md'), 'two\n');
  assert.deepEqual(await texts(files, [root]), ['project:AGENTS.md=two']);
  await mkdir(join(root, '.github'));
  await writeFile(join(root, '.github', 'copilot-instructions.md'), 'copilot\n');
  assert.deepEqual(await texts(files, [root]), ['project:AGENTS.md=two', 'project:.github/copilot-instructions.md=copilot']);
  await writeFile(join(root, '.github', 'copilot-instructions.md'), 'copilot 2\n');
  assert.deepEqual(await texts(files, [root]), ['project:AGENTS.md=two', 'project:.github/copilot-instructions.md=copilot 2']);
  await writeFile(join(user, 'AGENTS.md'), 'mine\n');
  assert.deepEqual(await texts(files, [root]), ['user:AGENTS.md=mine', 'project:AGENTS.md=two', 'project:.github/copilot-instructions.md=copilot 2']);
  await rm(join(root, 'AGENTS.md'));
  await rm(join(user, 'AGENTS.md'));
  assert.deepEqual(await texts(files, [root]), ['project:.github/copilot-instructions.md=copilot 2']);
  const { dir: other, cleanup: cleanupOther } = await tempDir();
  t.after(cleanupOther);
  await writeFile(join(other, 'CLAUDE.md'), 'other root\n');
  assert.deepEqual(await texts(files, [other]), ['project:CLAUDE.md=other root'], 'other roots, another answer');
});

test('a change made just before a look at other roots is seen by the next call for the first roots (the look closes their watch before its event is read)', async (t) => {
  const { dir: first, cleanup } = await tempDir();
  t.after(cleanup);
  const { dir: other, cleanup: cleanupOther } = await tempDir();
  t.after(cleanupOther);
  await writeFile(join(first, 'AGENTS.md'), 'one\n');
  await writeFile(join(other, 'CLAUDE.md'), 'other root\n');
  const files = new InstructionFiles(undefined);
  assert.deepEqual(await texts(files, [first]), ['project:AGENTS.md=one']);
  // In one turn of the event loop: the change, a call for the first roots (the kept answer, waiting for
  // the check phase), then one for other roots, whose look lets the first answer's watch go.
  writeFileSync(join(first, 'AGENTS.md'), 'one, changed\n');
  const again = texts(files, [first]);
  const elsewhere = texts(files, [other]);
  assert.deepEqual(await again, ['project:AGENTS.md=one, changed']);
  assert.deepEqual(await elsewhere, ['project:CLAUDE.md=other root']);
});

test('a linked instruction file whose target changes elsewhere is seen at once', async (t) => {
  const { dir: root, cleanup } = await tempDir();
  t.after(cleanup);
  await mkdir(join(root, 'docs'));
  await writeFile(join(root, 'docs', 'rules.md'), 'linked one\n');
  await symlink(join(root, 'docs', 'rules.md'), join(root, 'AGENTS.md'));
  const files = new InstructionFiles(undefined);
  assert.deepEqual(await texts(files, [root]), ['project:AGENTS.md=linked one']);
  await writeFile(join(root, 'docs', 'rules.md'), 'linked two\n');
  assert.deepEqual(await texts(files, [root]), ['project:AGENTS.md=linked two']);
});

test('calls arriving together share one look', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  await writeFile(join(dir, 'CLAUDE.md'), 'shared\n');
  const lstat = t.mock.method(fsPromises, 'lstat');
  await texts(new InstructionFiles(undefined), [dir]);
  const oneLook = lstat.mock.callCount();
  lstat.mock.resetCalls();
  const files = new InstructionFiles(undefined);
  const answers = await Promise.all(Array.from({ length: 16 }, () => texts(files, [dir])));
  for (const answer of answers) assert.deepEqual(answer, ['project:CLAUDE.md=shared']);
  assert.equal(lstat.mock.callCount(), oneLook, 'the lookups of one call');
});

test('writes of other files where the instruction files live keep the answer (a data directory is written every turn)', async (t) => {
  const { dir: root, cleanup } = await tempDir();
  t.after(cleanup);
  const { dir: user, cleanup: cleanupUser } = await tempDir();
  t.after(cleanupUser);
  await writeFile(join(root, 'AGENTS.md'), 'root rules\n');
  await mkdir(join(root, '.github'));
  const files = new InstructionFiles(user);
  assert.deepEqual(await texts(files, [root]), ['project:AGENTS.md=root rules']);
  // What a turn writes: the journal in the data directory, files of the project beside its AGENTS.md.
  await writeFile(join(user, 'service.journal'), 'x');
  await writeFile(join(root, 'notes.md'), 'y');
  await writeFile(join(root, '.github', 'workflow.yml'), 'z');
  await mkdir(join(root, 'src'));
  const lstat = t.mock.method(fsPromises, 'lstat');
  assert.deepEqual(await texts(files, [root]), ['project:AGENTS.md=root rules']);
  assert.equal(lstat.mock.callCount(), 0, 'nothing looked at again');
  // The instruction files themselves still count at once.
  await writeFile(join(root, '.github', 'copilot-instructions.md'), 'copilot\n');
  assert.deepEqual(await texts(files, [root]), ['project:AGENTS.md=root rules', 'project:.github/copilot-instructions.md=copilot']);
  await writeFile(join(user, 'AGENTS.md'), 'mine\n');
  assert.deepEqual(await texts(files, [root]), ['user:AGENTS.md=mine', 'project:AGENTS.md=root rules', 'project:.github/copilot-instructions.md=copilot']);
});

test("get_config's files without text: the same frozen array while unchanged, every change seen at once", async (t) => {
  const { dir: root, cleanup } = await tempDir();
  t.after(cleanup);
  const files = new InstructionFiles(undefined);
  const infos = async () => (await files.infosAtRoots([root])).map((file) => `${file.path}=${file.bytes}`);
  const none = await files.infosAtRoots([root]);
  assert.equal(await files.infosAtRoots([root]), none, 'kept: the same array');
  assert.ok(Object.isFrozen(none), 'shared: no caller may change it');
  await writeFile(join(root, 'AGENTS.md'), 'one\n');
  assert.deepEqual(await infos(), ['AGENTS.md=4']);
  const kept = await files.infosAtRoots([root]);
  assert.ok(Object.isFrozen(kept[0]), 'its files too');
  assert.throws(() => ((kept[0] as { bytes: number }).bytes = 1));
  await writeFile(join(root, 'AGENTS.md'), 'two two\n');
  assert.deepEqual(await infos(), ['AGENTS.md=8']);
  assert.ok(!('text' in (await files.infosAtRoots([root]))[0]!), 'no text');
  await rm(join(root, 'AGENTS.md'));
  assert.deepEqual(await infos(), []);
  // A linked file is never kept: each call looks again and sees its target's change.
  await writeFile(join(root, 'rules.md'), 'linked\n');
  await symlink(join(root, 'rules.md'), join(root, 'CLAUDE.md'));
  assert.deepEqual(await infos(), ['CLAUDE.md=7']);
  await writeFile(join(root, 'rules.md'), 'linked again\n');
  assert.deepEqual(await infos(), ['CLAUDE.md=13']);
});
