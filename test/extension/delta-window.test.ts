// DeltaWindow (src/protocol/delta-window.ts): a chat's stream pieces joined for DELTA_WINDOW_MS before they
// go on (across the service thread's port, to the chat webview). Order kept, nothing lost, the last piece
// flushed by its timer, by any other event, or by flush() (before a response). Real timers, no thresholds:
// the window given is 0 ms or an hour, and the test waits for what the window must do.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ServiceEvent } from '../../src/protocol';
import { DeltaWindow } from '../../src/protocol/delta-window';

const delta = (delta: string, seq: number, id: string | number = 'c1', conversation_id = 'conv-1'): ServiceEvent => ({ event: 'chat.delta', id, conversation_id, delta, seq });
const ended = (seq: number): ServiceEvent => ({ event: 'turn.ended', conversation_id: 'conv-1', source: 'editor', seq, outcome: 'answered' });

describe('DeltaWindow', () => {
  test('pieces of one chat within the window go on as one, ending at the last piece (its seq)', () => {
    const out: ServiceEvent[] = [];
    const window = new DeltaWindow((e) => out.push(e), 3_600_000);
    for (let i = 0; i < 20; i += 1) window.push(delta(`p${i} `, i + 1));
    assert.equal(out.length, 0, 'nothing before the window ends');
    window.flush();
    assert.deepEqual(out, [delta(Array.from({ length: 20 }, (_, i) => `p${i} `).join(''), 20)]);
    window.dispose();
  });

  test('any other event sends the pending piece first: the order is kept, nothing waits behind it', () => {
    const out: ServiceEvent[] = [];
    const window = new DeltaWindow((e) => out.push(e), 3_600_000);
    window.push(delta('a', 1));
    window.push(delta('b', 2));
    window.push(ended(3));
    assert.deepEqual(out, [delta('ab', 2), ended(3)]);
    window.push(delta('c', 4));
    window.flush();
    window.flush();
    assert.deepEqual(out, [delta('ab', 2), ended(3), delta('c', 4)], 'a flush with nothing pending sends nothing');
    window.dispose();
  });

  test("another chat's piece (another request, another conversation) is not joined: each keeps its own", () => {
    const out: ServiceEvent[] = [];
    const window = new DeltaWindow((e) => out.push(e), 3_600_000);
    window.push(delta('a', 1, 'c1'));
    window.push(delta('b', 1, 'c2'));
    window.push(delta('c', 2, 'c2', 'conv-2'));
    window.push(delta('d', 3, 'c2', 'conv-2'));
    window.flush();
    assert.deepEqual(out, [delta('a', 1, 'c1'), delta('b', 1, 'c2'), delta('cd', 3, 'c2', 'conv-2')]);
    window.dispose();
  });

  test('the last piece goes on by itself once its window ends; the event pushed is not changed', async () => {
    const out: ServiceEvent[] = [];
    const window = new DeltaWindow((e) => out.push(e), 0);
    const first = delta('x', 1);
    window.push(first);
    window.push(delta('y', 2));
    await new Promise((resolve) => setTimeout(resolve, 5));
    assert.deepEqual(out, [delta('xy', 2)]);
    assert.deepEqual(first, delta('x', 1), "the caller's event is copied, not joined into");
    window.dispose();
  });

  test('dispose drops the pending piece and its timer (its receiver is gone)', async () => {
    const out: ServiceEvent[] = [];
    const window = new DeltaWindow((e) => out.push(e), 0);
    window.push(delta('x', 1));
    window.dispose();
    await new Promise((resolve) => setTimeout(resolve, 5));
    assert.deepEqual(out, []);
  });
});
