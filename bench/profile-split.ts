// Splits the e2e's profiles of the extension host's thread (RA_E2E_CPU_PROFILE: `<file>.<watch>` and
// `<file>.<watch>.heapprofile`, written by Measure Responsiveness) by whose code ran or allocated: ours (the
// extension's bundle), VS Code's (its extension host), node's own, other extensions', GC and idle.
// `npx tsx bench/profile-split.ts /tmp/profile.defaults [PER=100]`: self time and sampled bytes per owner,
// and per message when PER (the watch's message count) is given, with our top functions.
import { existsSync, readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

/** Whose code a frame is. */
function ownerOf(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)' || functionName === '(root)') return 'program';
  if (/remote-assistant[^/]*\/dist\//.test(url) || url.includes('/dist/extension.js')) return 'ours';
  if (url.includes('e2e-bare-server') || url.includes('bare-server')) return 'bare server';
  if (url.includes('extensionHostProcess') || url.includes('/vs/')) return 'VS Code';
  if (url.startsWith('node:') || url === '') return 'node/native';
  return 'other extensions';
}

const where = (frame: CallFrame) => `${frame.functionName || '(anonymous)'} ${frame.url.split('/').pop()}:${frame.lineNumber + 1}`;

function table(totals: Map<string, number>, unit: (n: number) => string): string {
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${unit(v)}`)
    .join(', ');
}

function main(): void {
  const file = process.argv[2];
  if (!file) throw new Error('usage: profile-split.ts <cpuprofile> [messages]');
  const per = Number(process.argv[3] ?? 1);
  const cpu = JSON.parse(readFileSync(file, 'utf8')) as { nodes: { id: number; callFrame: CallFrame }[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(cpu.nodes.map((n) => [n.id, n]));
  const time = new Map<string, number>();
  const ourTime = new Map<string, number>();
  cpu.samples.forEach((id, i) => {
    const frame = byId.get(id)!.callFrame;
    const us = cpu.timeDeltas[i + 1] ?? 0;
    const owner = ownerOf(frame);
    time.set(owner, (time.get(owner) ?? 0) + us);
    if (owner === 'ours') ourTime.set(where(frame), (ourTime.get(where(frame)) ?? 0) + us);
  });
  const ms = (us: number) => `${(us / 1000 / per).toFixed(per > 1 ? 2 : 0)} ms`;
  console.log(`self time${per > 1 ? ` per message (${per})` : ''}: ${table(time, ms)}`);
  console.log(`  ours, top: ${table(new Map([...ourTime].sort((a, b) => b[1] - a[1]).slice(0, 10)), ms)}`);
  longestStretch(cpu, byId);

  const heapFile = `${file}.heapprofile`;
  if (!existsSync(heapFile)) return;
  interface HeapNode {
    callFrame: CallFrame;
    selfSize: number;
    children: HeapNode[];
  }
  const heap = JSON.parse(readFileSync(heapFile, 'utf8')) as { head: HeapNode };
  const bytes = new Map<string, number>();
  const ourBytes = new Map<string, number>();
  // A native or node frame's allocation counts for the JS that called it.
  const walk = (node: HeapNode, caller: string) => {
    const own = ownerOf(node.callFrame);
    const owner = own === 'node/native' || own === 'program' ? caller : own;
    bytes.set(owner, (bytes.get(owner) ?? 0) + node.selfSize);
    if (own === 'ours') ourBytes.set(where(node.callFrame), (ourBytes.get(where(node.callFrame)) ?? 0) + node.selfSize);
    for (const child of node.children) walk(child, owner);
  };
  walk(heap.head, 'node/native');
  const kb = (n: number) => `${(n / 1024 / per).toFixed(1)} KB`;
  console.log(`allocated (sampled, incl. collected)${per > 1 ? ' per message' : ''}: ${table(bytes, kb)}`);
  console.log(`  ours, top: ${table(new Map([...ourBytes].sort((a, b) => b[1] - a[1]).slice(0, 10)), kb)}`);
}

/** The longest run of samples without an idle one (the loop never free): its length, its self time by owner and its top frames. */
function longestStretch(cpu: { samples: number[]; timeDeltas: number[] }, byId: Map<number, { callFrame: CallFrame }>): void {
  let best = { from: 0, to: 0, us: 0 };
  let from = 0;
  let us = 0;
  cpu.samples.forEach((id, i) => {
    if (ownerOf(byId.get(id)!.callFrame) === 'idle') {
      from = i + 1;
      us = 0;
      return;
    }
    us += cpu.timeDeltas[i + 1] ?? 0;
    if (us > best.us) best = { from, to: i + 1, us };
  });
  const owners = new Map<string, number>();
  const frames = new Map<string, number>();
  for (let i = best.from; i < best.to; i += 1) {
    const frame = byId.get(cpu.samples[i]!)!.callFrame;
    const sampleUs = cpu.timeDeltas[i + 1] ?? 0;
    owners.set(ownerOf(frame), (owners.get(ownerOf(frame)) ?? 0) + sampleUs);
    frames.set(where(frame), (frames.get(where(frame)) ?? 0) + sampleUs);
  }
  const ms = (n: number) => `${(n / 1000).toFixed(1)} ms`;
  console.log(`longest stretch without idle: ${ms(best.us)}, ${best.to - best.from} samples: ${table(owners, ms)}`);
  console.log(`  its top frames: ${table(new Map([...frames].sort((a, b) => b[1] - a[1]).slice(0, 6)), ms)}`);
}

main();
