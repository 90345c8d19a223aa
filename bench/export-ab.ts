// The export row (bench/export.ts) for two builds (or more) at once, taking turns download by download,
// so that the machine's load (other sessions on the same 2 cores) falls on all alike. A_CLI and B_CLI are
// the two dist/cli.js (B defaults to this tree's; C_CLI, D_CLI more); each serves its own copy of the same
// long conversation.
// Per download: the ratio (whole / first piece), the later pieces' mean ms, and the CPU the service's
// main thread spent on the later pieces (its schedstat, so load does not count). Printed: medians over
// ROUNDS (default 15), the 10th percentile and median of every later piece's round trip (the 10th is
// the least touched by the load), and the load average before and after.
// `A_CLI=/path/to/main/dist/cli.js npx tsx bench/export-ab.ts` (FORMAT=json for the JSON export;
// NODE_OPTIONS=--cpu-prof in the environment profiles both services, writing into their working directory).
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { client, download, seed, TOKEN } from './export';
import { fmt, percentile, spawnListening } from './util';

const ROUNDS = Number(process.env.ROUNDS ?? 15);
const FORMAT = process.env.FORMAT === 'json' ? 'json' : 'markdown';

/** CPU ms the main thread of process `pid` has run (Linux schedstat). */
function threadCpuMs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
}

interface Side {
  name: string;
  dir: string;
  pid: number;
  request: Awaited<ReturnType<typeof client>>;
  stop: () => Promise<void>;
  ratio: number[];
  /** Each download's first piece (ms): a kept rendering's, so one full read without the render. */
  first: number[];
  /** The service main thread's CPU for each first piece (ms). */
  firstCpu: number[];
  piece: number[];
  cpu: number[];
  /** Every later piece's round trip (ms), all rounds. */
  trips: number[];
}

async function open(name: string, cli: string): Promise<Side> {
  const dir = await mkdtemp(join(tmpdir(), `ra-bench-export-ab-${name}-`));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN }));
  await seed(dir);
  const service = await spawnListening([cli, 'serve', '--data-dir', dir, '--port', '0']);
  return { name, dir, pid: service.child.pid!, request: await client(service.port), stop: service.stop, ratio: [], first: [], firstCpu: [], piece: [], cpu: [], trips: [] };
}

async function round(side: Side): Promise<void> {
  // The first piece alone, then the rest: the CPU of the later pieces only.
  let cpu0 = 0;
  const trips: number[] = [];
  const timed: Side['request'] = (frame) => {
    const started = performance.now();
    return side.request(frame).then((reply) => (trips.push(performance.now() - started), reply));
  };
  const before = threadCpuMs(side.pid);
  const { first, whole, pieces } = await download(timed, FORMAT, () => (cpu0 = threadCpuMs(side.pid)));
  side.firstCpu.push(cpu0 - before);
  side.trips.push(...trips.slice(1));
  const cpu = threadCpuMs(side.pid) - cpu0;
  side.ratio.push(whole / first);
  side.first.push(first);
  side.piece.push((whole - first) / (pieces - 1));
  side.cpu.push(cpu / (pieces - 1));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const aCli = process.env.A_CLI;
  if (!aCli) throw new Error('A_CLI=/path/to/another/dist/cli.js');
  const clis: [string, string | undefined][] = [
    ['A', aCli],
    ['B', process.env.B_CLI ?? join(__dirname, '..', 'dist', 'cli.js')],
    ['C', process.env.C_CLI],
    ['D', process.env.D_CLI],
  ];
  const load0 = loadavg()[0];
  const sides: Side[] = [];
  for (const [name, cli] of clis) if (cli) sides.push(await open(name, cli));
  try {
    for (const side of sides) await download(side.request, FORMAT); // renders it (kept two minutes), warms up
    for (let r = 0; r < ROUNDS; r += 1) for (const side of r % 2 === 0 ? sides : [...sides].reverse()) await round(side);
    for (const s of sides) {
      const trips = [...s.trips].sort((a, b) => a - b);
      console.log(
        `${s.name} ${FORMAT}: ratio ${fmt(median(s.ratio))}, first piece ${fmt(median(s.first))} ms (${fmt(median(s.firstCpu))} ms CPU), later piece ${fmt(median(s.piece))} ms, service main thread ${fmt(median(s.cpu))} ms CPU a piece (medians of ${ROUNDS}); a later piece's round trip p10 ${fmt(percentile(trips, 10))} / p50 ${fmt(percentile(trips, 50))} ms`,
      );
    }
    const [a, ...others] = sides;
    for (const s of others) console.log(`${s.name}/A later piece ${fmt(median(s.piece) / median(a.piece))}, CPU ${fmt(median(s.cpu) / median(a.cpu))}`);
    console.log(`load ${fmt(load0)} -> ${fmt(loadavg()[0])}`);
  } finally {
    for (const s of sides) {
      await s.stop();
      await rm(s.dir, { recursive: true, force: true });
    }
  }
}

void main();
