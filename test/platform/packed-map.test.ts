import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { packedMap } from '../../src/platform/packed-map';

test('packedMap maps as Array.prototype.map does: each item with its index, in order', () => {
  const seen: [string, number][] = [];
  const out = packedMap(['a', 'b', 'c'], (item, i) => {
    seen.push([item, i]);
    return `${item}${i}`;
  });
  assert.deepEqual(out, ['a0', 'b1', 'c2']);
  assert.deepEqual(seen, [
    ['a', 0],
    ['b', 1],
    ['c', 2],
  ]);
  assert.deepEqual(
    packedMap([], () => 1),
    [],
  );
});

test("packedMap's arrays have one hidden class whether its caller runs interpreted or optimized by TurboFan", (t) => {
  // V8's own checks (--allow-natives-syntax) in a child process: a caller's result before and after the
  // caller and packedMap are optimized, beside the same caller with Array.prototype.map (on Node 20 a packed array
  // before, a holey one after: the deopts packedMap avoids).
  const helper = path.join(__dirname, '../../src/platform/packed-map.ts');
  const script = `
    const { packedMap } = require(${JSON.stringify(helper)});
    function caller(xs) { return packedMap(xs, (x) => ({ x })); }
    function plain(xs) { return xs.map((x) => ({ x })); }
    const xs = [1, 2, 3];
    for (const f of [caller, packedMap, plain]) %PrepareFunctionForOptimization(f);
    const before = caller(xs);
    const plainBefore = plain(xs);
    // Feedback for every site first: optimized with too little, the caller deopts at once and runs interpreted.
    for (let i = 0; i < 5; i++) {
      caller(xs);
      plain(xs);
    }
    for (const f of [caller, packedMap, plain]) %OptimizeFunctionOnNextCall(f);
    const after = caller(xs);
    const plainAfter = plain(xs);
    console.log(JSON.stringify({
      same: %HaveSameMap(before, after),
      holey: %HasHoleyElements(before) || %HasHoleyElements(after),
      plainSame: %HaveSameMap(plainBefore, plainAfter),
      // Bit 16 of V8's optimization status: TurboFan code (none under --jitless, for instance).
      optimized: (%GetOptimizationStatus(caller) & 16) !== 0 && (%GetOptimizationStatus(plain) & 16) !== 0,
    }));
  `;
  const run = spawnSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(run.status, 0, run.stderr);
  const out = JSON.parse(run.stdout.trim()) as { same: boolean; holey: boolean; plainSame: boolean; optimized: boolean };
  // Without TurboFan's code the check says nothing (review19e: under NODE_OPTIONS=--jitless a map-based helper passed).
  assert.ok(out.optimized, 'the callers were not optimized by TurboFan: the check cannot tell');
  assert.deepEqual({ same: out.same, holey: out.holey }, { same: true, holey: false });
  if (out.plainSame) t.diagnostic('Array.prototype.map gave one hidden class here too: packedMap may no longer be needed');
});
