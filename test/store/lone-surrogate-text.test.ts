// Text a model gives the store beside a message's body: a remembered fact (the `remember` tool), an
// unrecorded tool call's detail (run_command's command line, listed by undo) and a message's tool name (a
// tool call the model named). sql.js binds text as UTF-8, which cannot hold a lone UTF-16 surrogate: it
// stored one as bytes that read back as three U+FFFD, so such text was not what was given, and the parts
// kept in memory (the history cache's tool name) read otherwise than the row. Made well-formed where it
// enters (protocol/code-points.ts wellFormed: one U+FFFD a lone surrogate, a whole pair kept), it reads the
// same live and after a reopen.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore, type Store } from '../../src/store/index';
import { tempDir } from '../helpers/temp';

const LONE = 'lone \ud800 and \udc00, pair \ud83d\ude00';
const STORED = 'lone \ufffd and \ufffd, pair \ud83d\ude00';

interface Seen {
  memory: string | undefined;
  found: string[];
  detail: (string | null)[];
  toolName: (string | null | undefined)[];
}

function read(store: Store, memoryId: string): Promise<Seen> | Seen {
  return store.messages.recent('c1', { includeTools: true }).then((rows) => ({
    memory: store.memory.get(memoryId)?.content,
    found: store.memory.search('pair').map((m) => m.content),
    detail: store.fileChanges.ofTurn('c1', 't1').map((c) => c.detail),
    toolName: rows.map((m) => m.tool_name),
  }));
}

test('a remembered fact, an unrecorded call and a tool name with lone surrogates are stored well-formed, the same live and after a reopen', { timeout: 60_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('lone-surrogate-text-');
  t.after(cleanup);
  let store = await openStore(dir);
  t.after(() => store.close().catch(() => undefined));
  const { id } = await store.memory.put(LONE);
  await store.conversations.create({ id: 'c1', title: 'c1', source: 'ws', created_at: new Date(0).toISOString() });
  await store.fileChanges.recordUnrecorded({ id: 'u1', conversation_id: 'c1', turn_id: 't1', tool: 'run_command', detail: `echo ${LONE}` });
  const toolMessage = { id: 'm1', conversation_id: 'c1', role: 'tool' as const, content: 'unknown tool', timestamp: new Date(1).toISOString(), tool_name: `tool ${LONE}` };
  await store.messages.append(toolMessage);
  assert.equal(toolMessage.tool_name, `tool ${STORED}`, "made well-formed in the caller's message (what the history cache keeps)");

  const live = await read(store, id);
  assert.deepEqual(live, { memory: STORED, found: [STORED], detail: [`echo ${STORED}`], toolName: [`tool ${STORED}`] });
  await store.close();
  store = await openStore(dir);
  assert.deepEqual(await read(store, id), live, 'after a reopen (the journal replayed)');
});
