// The system message is kept while what it is made of stays (agent/prompt/turn-context.ts): each of its
// inputs changed gives a new one, as if made afresh (an instruction file edited, the model switched, its
// window told, the user's prompt changed, another folder).
import assert from 'node:assert/strict';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { TurnContext } from '../../src/agent/prompt/turn-context';
import type { ServiceConfig } from '../../src/protocol';
import { tempDir } from '../helpers/temp';

test('the kept system message is the one made afresh, whatever changed', async (t) => {
  const { dir, cleanup } = await tempDir('system-kept-');
  t.after(cleanup);
  const root = join(dir, 'root');
  const other = join(dir, 'other');
  await mkdir(root);
  await mkdir(other);
  await writeFile(join(root, 'AGENTS.md'), 'rule one\n');
  const kept = new TurnContext(() => [root], undefined);
  t.after(() => kept.close());
  const config = { system_prompt_mode: 'add' } as ServiceConfig;
  const workplace = { model: 'm1', contextWindow: null };
  /** What this context says, and what a new one (nothing kept) says for the same inputs. */
  const both = async (c: ServiceConfig, w: { model: string; contextWindow: number | null }, roots = [root]) => {
    const fresh = new TurnContext(() => roots, undefined);
    try {
      const said = (await kept.systemMessage(c, [], w, {}, roots)).content;
      assert.equal(said, (await fresh.systemMessage(c, [], w, {}, roots)).content);
      return said;
    } finally {
      fresh.close();
    }
  };
  const first = await both(config, workplace);
  assert.match(first, /rule one/);
  assert.equal(await both(config, workplace), first);
  await writeFile(join(root, 'AGENTS.md'), 'rule two, edited\n');
  assert.match(await both(config, workplace), /rule two, edited/);
  assert.match(await both(config, { model: 'm2', contextWindow: null }), /Model: m2;/);
  assert.match(await both(config, { model: 'm2', contextWindow: 64_000 }), /context window: 64000 tokens/);
  assert.match(await both({ ...config, system_prompt: 'be terse' }, workplace), /be terse/);
  assert.match(await both({ ...config, system_prompt: 'be terse', system_prompt_mode: 'replace' }, workplace), /^be terse/);
  const elsewhere = await both(config, workplace, [other]);
  assert.ok(elsewhere.includes(other) && !elsewhere.includes('rule two'));
});

test('the same instruction text in another folder (a worktree of the repository) or under another name is not the kept message', async (t) => {
  // Review of s12/agent12b: a worktree has the same AGENTS.md text and relative path; with the roots'
  // (or the files' scope and path) comparison removed, the worktree's conversation was told the main folder.
  const { dir, cleanup } = await tempDir('system-kept-roots-');
  t.after(cleanup);
  const main = join(dir, 'main');
  const worktree = join(dir, 'worktree');
  for (const root of [main, worktree]) {
    await mkdir(root);
    await writeFile(join(root, 'AGENTS.md'), 'same rules\n');
  }
  const kept = new TurnContext(() => [main], undefined);
  t.after(() => kept.close());
  const config = { system_prompt_mode: 'add' } as ServiceConfig;
  const workplace = { model: 'm', contextWindow: null };
  const said = async (roots: string[]) => (await kept.systemMessage(config, [], workplace, {}, roots)).content;
  assert.ok((await said([main])).includes(main));
  const there = await said([worktree]);
  assert.ok(there.includes(worktree) && !there.includes(main), 'the worktree conversation is told its own folder');
  await rename(join(worktree, 'AGENTS.md'), join(worktree, 'CLAUDE.md'));
  const fresh = new TurnContext(() => [worktree], undefined);
  t.after(() => fresh.close());
  assert.equal(await said([worktree]), (await fresh.systemMessage(config, [], workplace, {}, [worktree])).content, 'the file named anew is said as a new context says it');
});
