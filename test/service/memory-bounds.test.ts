// Issue 20, "Must fix" 1: what clients send must not stay in the service's memory without bound. The
// built CLI (dist/cli.js) is attacked through real sockets, three times over: the first two rounds fill
// what is bounded (the events kept for catching up, the agent's history cache: one round of webhook posts
// fills them only part way, so a second was still adding up to the bound, 27-30 MB of heap) and the
// allocator's pools; the third must then add next to nothing, where before the fix every round added as
// much as the first (everything was held: every message, in several places). Memory is read after a full garbage collection (asked of
// the child's inspector), resident (VmRSS) and V8's heap with what it holds outside. The fake provider
// echoes each message, so every big message gets a reply as big, streamed in pieces, as in the report.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { hashPassword } from '../../src/transport/auth/passwords';
import { ChildMemory, INSPECTED_ENV, type HeldMemory } from '../helpers/child-memory';
import { serve, type ServeProcess } from '../helpers/cli';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { postJson, writeConfig } from '../helpers/service';
import { tempDir, waitFor } from '../helpers/temp';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver';
import { TestClient } from '../helpers/ws-client';

/** Just under the 1 MiB frame and body limit, with room for the envelope. */
const BIG = 900_000;
/** Each round: chats over new conversations, or webhook posts (each a new conversation). */
const CONVERSATIONS = 6;
const CHATS_EACH = 3;
const POSTS = 16;
/** What the third round may add: before the fix it added about 4 MB of heap per message (each held several times). */
const HEAP_MB_BOUND = 30;
const RESIDENT_MB_BOUND = 100;
/** Three rounds of megabyte messages on a shared machine take tens of seconds. */
const SLOW = { timeout: 240_000 };

let fake: FakeOpenAI;
let receiver: WebhookReceiver;
const cleanups: (() => Promise<void>)[] = [];
before(async () => {
  fake = await startFakeOpenAI();
  receiver = await startWebhookReceiver();
});
after(async () => {
  for (const cleanup of cleanups) await cleanup();
  await fake?.close();
  await receiver?.close();
});

async function started(config: Record<string, unknown>): Promise<{ proc: ServeProcess; memory: ChildMemory }> {
  const temp = await tempDir('ra-memory-');
  await writeConfig(temp.dir, { base_url: fake.url, ...config });
  const proc = await serve(temp.dir, 0, INSPECTED_ENV);
  const memory = await ChildMemory.attach(proc);
  cleanups.push(async () => {
    memory.close();
    proc.child.kill('SIGTERM');
    await proc.exited;
    await temp.cleanup();
  });
  return { proc, memory };
}

/** A distinct big text (so no two messages share a string). */
const bigText = (tag: string) => `${tag} ${'x'.repeat(BIG - tag.length - 1)}`;

/** Three rounds of the attack; what the last added to what is held after the second. */
async function rounds(memory: ChildMemory, round: (n: number) => Promise<void>, what: string): Promise<void> {
  const held: HeldMemory[] = [];
  for (const n of [1, 2, 3]) {
    const start = Date.now();
    await round(n);
    held.push(await memory.held());
    console.log(`${what}, round ${n} (${Date.now() - start} ms): ${held[n - 1]!.rssMb.toFixed(0)} MB resident, ${held[n - 1]!.heapMb.toFixed(0)} MB heap`);
  }
  const [, filled, last] = held as [HeldMemory, HeldMemory, HeldMemory];
  assert.ok(last.heapMb - filled.heapMb < HEAP_MB_BOUND, `${what}: the third round added ${(last.heapMb - filled.heapMb).toFixed(0)} MB of heap`);
  assert.ok(last.rssMb - filled.rssMb < RESIDENT_MB_BOUND, `${what}: the third round added ${(last.rssMb - filled.rssMb).toFixed(0)} MB resident`);
}

test('a password user sending big chats over ever new conversations: a third round holds no more than the second', SLOW, async () => {
  const password = 'a long enough password for mallory';
  const { proc, memory } = await started({ users: [{ username: 'mallory', password_hash: await hashPassword(password) }] });
  const login = await postJson(`http://127.0.0.1:${proc.port}/auth`, { username: 'mallory', password });
  const token = (login.body!.data as { token: string }).token;
  const clients = await Promise.all(Array.from({ length: 4 }, () => TestClient.authed(`ws://127.0.0.1:${proc.port}/ws`, token)));
  try {
    await rounds(
      memory,
      async (n) => {
        await Promise.all(
          Array.from({ length: CONVERSATIONS }, async (_, c) => {
            const client = clients[c % clients.length]!;
            let conversationId: string | undefined;
            for (let i = 0; i < CHATS_EACH; i += 1) {
              const reply = await client.request({ type: 'chat', stream: true, message: bigText(`r${n}c${c}m${i}`), ...(conversationId ? { conversation_id: conversationId } : {}) }, 60_000);
              assert.equal(reply.status, 'ok', JSON.stringify(reply).slice(0, 300));
              conversationId = (reply.data as { conversation_id: string }).conversation_id;
            }
          }),
        );
      },
      'password chats',
    );
  } finally {
    for (const client of clients) client.close();
  }
});

test('unauthenticated big POSTs to a webhook account without a secret: a third round holds no more than the second', SLOW, async () => {
  const { proc, memory } = await started({ channels: { webhook: { accounts: { open: { incoming_path: '/open', outgoing_url: receiver.url('/open') } } } } });
  let sent = 0;
  await rounds(
    memory,
    async () => {
      const statuses = await Promise.all(Array.from({ length: POSTS }, async () => (await postJson(`http://127.0.0.1:${proc.port}/open`, { message: bigText(`w${(sent += 1)}`) })).status));
      assert.deepEqual(new Set(statuses), new Set([202]));
      await waitFor(() => receiver.requests.filter((r) => r.path === '/open' && r.answered === 200).length >= sent || undefined, 'every reply delivered', 60_000, 50);
    },
    'webhook posts',
  );
});
