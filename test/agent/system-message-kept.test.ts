// The system message is kept while what it is made of stays (agent/prompt/turn-context.ts): each of its
// inputs changed gives a new one, as if made afresh (an instruction file edited, the model switched, its
// window told, the user's prompt changed, another folder).
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
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
