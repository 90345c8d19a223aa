// The history store's recent bodies (store/history/recent-bodies.ts): the newest added kept within the
// bounds (bodies and bytes), the oldest forgotten first, a body added again counted as new, drop and clear.
// Checked against a plain model of that rule over many random steps (keys added again, bodies over the
// byte bound, drops of kept and forgotten keys, clears), at each step every key asked.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KeyedBody } from '../../src/store/history/protocol';
import { RecentBodies } from '../../src/store/history/recent-bodies';

/** The rule: kept in the order added (a key added again moves to the end), the oldest forgotten while over a bound. */
class Model {
  kept = new Map<number, { content: string; size: number }>();
  constructor(
    private readonly maxBodies: number,
    private readonly maxBytes: number,
  ) {}
  add(bodies: KeyedBody[]): void {
    for (const b of bodies) {
      const size = 100 + b.content.length + (b.data?.length ?? 0);
      if (size > this.maxBytes) continue;
      this.kept.delete(b.key);
      this.kept.set(b.key, { content: b.content, size });
    }
    const bytes = () => [...this.kept.values()].reduce((sum, k) => sum + k.size, 0);
    while (this.kept.size > this.maxBodies || bytes() > this.maxBytes) this.kept.delete(this.kept.keys().next().value!);
  }
}

function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

for (const [maxBodies, maxBytes] of [
  [16, 1_000_000],
  [1_000, 4_000],
  [40, 6_000],
] as const) {
  test(`recent bodies: as the model says over 4,000 random steps (${maxBodies} bodies, ${maxBytes} bytes)`, () => {
    const rnd = random(maxBodies * 7 + maxBytes);
    const recent = new RecentBodies(maxBodies, maxBytes);
    const model = new Model(maxBodies, maxBytes);
    const keys = 3 * maxBodies > 200 ? 200 : 3 * maxBodies;
    for (let step = 0; step < 4_000; step++) {
      const r = rnd();
      if (r < 0.7) {
        const bodies: KeyedBody[] = [];
        for (let n = Math.floor(rnd() * 4); n >= 0; n--) {
          const key = Math.floor(rnd() * keys);
          const long = rnd() < 0.05 ? maxBytes : 0;
          bodies.push({ key, conversation_id: 'c', role: 'user', content: `${key}:${step}:${'x'.repeat(long + Math.floor(rnd() * 200))}`, data: rnd() < 0.2 ? 'd'.repeat(50) : null });
        }
        recent.add(bodies);
        model.add(bodies);
      } else if (r < 0.95) {
        const drop = [Math.floor(rnd() * keys), Math.floor(rnd() * keys)];
        recent.drop(drop);
        for (const key of drop) model.kept.delete(key);
      } else if (r < 0.96) {
        recent.clear();
        model.kept.clear();
      }
      for (let key = 0; key < keys; key++) assert.equal(recent.get(key)?.content, model.kept.get(key)?.content, `step ${step}, key ${key}`);
    }
  });
}

test('recent bodies: a full one forgets the oldest at each add, whatever was added again or dropped before', () => {
  const recent = new RecentBodies(3, 1_000_000);
  const body = (key: number, content = `b${key}`): KeyedBody => ({ key, conversation_id: 'c', role: 'assistant', content, data: null });
  recent.add([body(1), body(2), body(3)]);
  recent.add([body(1, 'again')]); // 1 is now the newest
  recent.add([body(4)]); // 2 is the oldest
  assert.equal(recent.get(2), undefined);
  assert.equal(recent.get(1)?.content, 'again');
  recent.drop([3]);
  recent.add([body(5), body(6)]); // 1, 4, 5, 6: 1 goes
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6].map((k) => recent.get(k)?.content ?? null),
    [null, null, null, 'b4', 'b5', 'b6'],
  );
  for (let k = 7; k < 3_000; k++) recent.add([body(k)]);
  assert.deepEqual(
    [2996, 2997, 2998, 2999].map((k) => recent.get(k)?.content ?? null),
    [null, 'b2997', 'b2998', 'b2999'],
  );
});
