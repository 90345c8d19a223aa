// The e2e's diagnostic CPU profile (src/extension/cpu-profile.ts, stall24): nothing without
// RA_E2E_CPU_PROFILE; with it, a V8 .cpuprofile of this thread written where the variable says, and a
// heap sampling profile beside it (stall28).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { CpuProfile } from '../../src/extension/cpu-profile';
import { tempDir } from '../helpers/temp';

/** Garbage made by a function of its own name: the heap profile must name it. */
function madeGarbage(): number {
  return Array.from({ length: 20_000 }, (_, i) => ({ i, text: `piece ${i}` })).length;
}

test('no profile unless the environment names a file', async () => {
  assert.equal(await CpuProfile.start({}), undefined);
});

test('a profile of the work done while it ran, written to the named file', async (t) => {
  const { dir, cleanup } = await tempDir('ra-cpu-profile-');
  t.after(cleanup);
  const file = join(dir, 'host.cpuprofile');
  const profile = await CpuProfile.start({ RA_E2E_CPU_PROFILE: file });
  assert.ok(profile);
  let sum = 0;
  for (let i = 0; i < 2_000_000; i += 1) sum += Math.sqrt(i);
  assert.ok(sum > 0);
  assert.equal(madeGarbage(), 20_000);
  assert.equal(await profile.stop(), file);
  const written = JSON.parse(await readFile(file, 'utf8')) as { nodes: unknown[]; samples: unknown[]; startTime: number; endTime: number };
  assert.ok(written.nodes.length > 0 && written.samples.length > 0, 'nodes and samples');
  assert.ok(written.endTime > written.startTime);
  type HeapNode = { callFrame: { functionName: string }; selfSize: number; children: HeapNode[] };
  const heap = JSON.parse(await readFile(`${file}.heapprofile`, 'utf8')) as { head: HeapNode };
  const all = (node: HeapNode): number => node.selfSize + node.children.reduce((sum, child) => sum + all(child), 0);
  const bytesOf = (node: HeapNode, name: string): number => (node.callFrame.functionName === name ? all(node) : node.children.reduce((sum, child) => sum + bytesOf(child, name), 0));
  assert.ok(bytesOf(heap.head, 'madeGarbage') > 100_000, 'the garbage made (about 2 MB) is in the heap profile, under the function that made it');
});
