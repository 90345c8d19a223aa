/**
 * `items.map(fn)` for the turn's hot path, whose arrays have one hidden class however V8 runs the call.
 * `Array.prototype.map` gives a packed array from its builtin (interpreted or baseline callers) and a
 * holey one when TurboFan inlines it into an optimized caller (Node 20, V8 11.3), and spreads, slices and
 * filters keep that kind. So every reader of such an array optimized on the packed kind (its length, an
 * index, `for...of`, a spread, `reduce`) deoptimizes ("wrong map") when the code making it is optimized,
 * hundreds of turns into a fresh service (docs/design.md, "(s19, turn19e)"). An array grown by `push`
 * from a literal is packed in every tier.
 */
export function packedMap<T, U>(items: readonly T[], fn: (item: T, index: number) => U): U[] {
  const out: U[] = [];
  for (let i = 0; i < items.length; i += 1) out.push(fn(items[i], i));
  return out;
}
