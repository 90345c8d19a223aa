// review17b: a tool source that makes new Tool objects at every listing (service.json's custom tools, an
// MCP server's, the editor's VS Code tools) must not make the kept request history be made again at every
// step: the tools' model names depend only on their names, so an unchanged list of names keeps them (and
// with them the conversation's view, RequestViews); a renamed tool still makes new ones.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { CompletionRequest, CompletionResult, Provider } from '../../src/agent/providers/types';
import { Service } from '../../src/service';
import { tempDir } from '../helpers/temp';

const say = (name: string) => ({ name, description: 'prints text', parameters: { text: 'string' }, command: ['printf', '%s', '{text}'] });

test('with a custom tool configured, each turn extends the kept view (after the first two); renaming the tool makes the view again', async (t) => {
  const { dir, cleanup } = await tempDir('request-view-tools-');
  await writeFile(join(dir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: dir, tools: [say('say')] }));
  const offered: string[][] = [];
  const provider: Provider = {
    name: 'recording',
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      offered.push((request.tools ?? []).map((tool) => tool.name));
      return { text: 'ok', tool_calls: [], finish_reason: 'stop' };
    },
  };
  const service = await Service.open({ dataDir: dir, provider: () => provider });
  t.after(async () => {
    await service.stop();
    await cleanup();
  });
  // The conversation's kept view (RequestViews' map): extended, it stays the same object; made again, a new one.
  const kept = (service.agent as unknown as { views: { views: Map<string, object> } }).views.views;
  const seen: object[] = [];
  /** Per turn: whether its view was made anew (true) or the kept one extended. */
  const made: boolean[] = [];
  let conversationId: string | undefined;
  const chat = async (message: string) => {
    conversationId = (await service.agent.chat({ message, conversationId, source: { kind: 'lan' } })).conversation_id;
    const view = kept.get(conversationId);
    assert.ok(view, 'the view is kept');
    made.push(!seen.includes(view));
    if (!seen.includes(view)) seen.push(view);
  };
  for (let i = 0; i < 6; i += 1) await chat(`turn ${i}`);
  assert.ok(
    offered.every((names) => names.includes('say')),
    'the custom tool is offered',
  );
  // The first two turns make it (a view of one part is not extended: RequestViews' `extended`); every later one extends it.
  assert.deepEqual(made, [true, true, false, false, false, false]);
  // A renamed tool: new model names, so the view is made again once, then extended.
  await service.config.edit((raw) => {
    raw.tools = [say('speak')];
  });
  for (let i = 0; i < 3; i += 1) await chat(`renamed ${i}`);
  assert.ok(offered.at(-1)!.includes('speak'), 'the renamed tool is offered');
  assert.deepEqual(made.slice(6), [true, false, false]);
});
