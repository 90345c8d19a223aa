// The reply's last piece reaches every watcher before the turn's end work runs (docs/design.md, "The
// first pieces and the last (s27, follow27)"). A piece is sent to the conversation's
// followers (the sender one of them) once the loop's turn is done; the last one's turn is also the one
// in which the model's answer completes, and the reply's commit (its journal record, its body handed to
// history.db, its statements) ran before that send, so the last piece waited for it, and its fan-out
// then shared the cores with the threads the commit had woken. Counted here, over real sockets, is what
// ran between the last piece's publish and its frame's write to each socket: the journal's transactions.
import assert from 'node:assert/strict';
import { Socket } from 'node:net';
import { test } from 'node:test';
import type { CompletionRequest, CompletionResult, Provider } from '../../src/agent/providers/types';
import { Service } from '../../src/service';
import { writeConfig, TEST_TOKEN } from '../helpers/service';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const LIMIT = { timeout: 120_000 };

type Frame = Record<string, unknown>;

test("a streamed reply's last piece is written to the sender's and every follower's socket before the reply's commit runs", LIMIT, async (t) => {
  const { dir, cleanup } = await tempDir('ra-follow-last-');
  t.after(cleanup);
  await writeConfig(dir, {});
  // Streams two pieces, waits until the test saw them arrive (the user message is durable and told, so
  // pieces are no longer held: agent/user-commit.ts), then gives the last one and answers at once.
  let release = (): void => undefined;
  const arrived = new Promise<void>((resolve) => (release = resolve));
  let service: Service | undefined;
  /** The journal's last transaction when the last piece was published. */
  let atLastPiece: number | undefined;
  const model: Provider = {
    name: 'pieces',
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      if (!request.onDelta) return { text: 'hello', tool_calls: [], finish_reason: 'stop' };
      request.onDelta('one ');
      request.onDelta('two ');
      await arrived;
      atLastPiece = service!.store.db.lastWrite;
      request.onDelta('LAST-PIECE');
      return { text: 'one two LAST-PIECE', tool_calls: [], finish_reason: 'stop' };
    },
  };
  service = await Service.open({ dataDir: dir, host: '127.0.0.1', port: 0, provider: () => model });
  t.after(() => service!.stop());
  const { port } = await service.start();
  const url = `ws://127.0.0.1:${port}/ws`;
  const sender = await TestClient.authed(url, TEST_TOKEN);
  const followers = [await TestClient.authed(url, TEST_TOKEN), await TestClient.authed(url, TEST_TOKEN), await TestClient.authed(url, TEST_TOKEN)];
  t.after(() => [sender, ...followers].forEach((c) => c.close()));
  const first = await sender.request({ type: 'chat', message: 'hello' });
  const id = (first.data as { conversation_id: string }).conversation_id;
  for (const follower of followers) assert.equal((await follower.request({ type: 'follow_conversation', conversation_id: id })).status, 'ok');

  // The service's writes of the last piece's frame (this process hosts it): the journal's transactions
  // made since the piece was published, one entry per socket it is written to.
  const since: number[] = [];
  const write = Socket.prototype.write;
  Socket.prototype.write = function (this: Socket, chunk: unknown, ...rest: unknown[]) {
    if (Buffer.isBuffer(chunk) && atLastPiece !== undefined && chunk.includes('"delta":"LAST-PIECE"')) since.push(service!.store.db.lastWrite - atLastPiece);
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof write;
  t.after(() => (Socket.prototype.write = write));

  const isPiece = (text: string) => (f: Frame) => f.event === 'chat.delta' && f.conversation_id === id && f.delta === text;
  const chat = sender.request({ type: 'chat', message: 'stream please', conversation_id: id, stream: true });
  for (const client of [sender, ...followers]) await client.next(isPiece('two '));
  release();
  const answer = await chat;
  assert.equal(answer.status, 'ok', JSON.stringify(answer));
  for (const client of [sender, ...followers]) {
    await client.next(isPiece('LAST-PIECE'));
    await client.next((f) => f.event === 'turn.ended' && f.conversation_id === id);
  }
  assert.equal(since.length, 4, 'the last piece written once to each of the four sockets');
  assert.deepEqual(since, [0, 0, 0, 0], "no journal transaction (the reply's commit) ran before the last piece's write");
});
