// The get_config row (bench/ws.ts) for several builds of the service at once: the bare `ws` echo and each
// build take turns in the same alternating slices (measurePair), so the machine's load falls on all alike.
// `A=<path to another dist/cli.js>` (e.g. main's, built in its worktree), `B` this tree's dist/cli.js
// unless given, and up to four more (`C`..`F`, e.g. builds cut short to find where a round trip goes).
// ROUNDS times at each connection count (CONNECTIONS, default "1,64"), the builds' order rotated every
// round. Prints each round's round trips a second and server CPU a round trip (us) of the echo and of each
// build (in brackets the bench's own, the clients', CPU a round trip), each build's ratio against the
// echo, and their medians over the rounds with B's against A's.
// `A=/tmp/base/dist/cli.js ROUNDS=5 npx tsx bench/ws-ab.ts` (`npm run build` first).
import { loadavg, tmpdir } from 'node:os';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fmt, percentile, spawnListening } from './util';
import { ECHO_SERVER, measurePair, PingPong, TOKEN, warmedUp } from './ws';

const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

interface Build {
  name: string;
  cli: string;
  service?: Awaited<ReturnType<typeof spawnListening>>;
  ratios: number[];
  cpuRatios: number[];
  cpuUs: number[];
  /** Round trips a second over A's, each round. */
  overA: number[];
}

async function main(): Promise<void> {
  if (!process.env.A) throw new Error('A=<path to the other build dist/cli.js> is required');
  const builds: Build[] = ['A', 'B', 'C', 'D', 'E', 'F']
    .map((name) => ({ name, given: process.env[name] ?? (name === 'B' ? join(__dirname, '..', 'dist', 'cli.js') : undefined) }))
    .filter((build): build is { name: string; given: string } => build.given !== undefined)
    .map(({ name, given }) => ({ name, cli: resolve(given), ratios: [], cpuRatios: [], cpuUs: [], overA: [] }));
  const rounds = Number(process.env.ROUNDS ?? 3);
  const counts = (process.env.CONNECTIONS ?? '1,64').split(',').map(Number);
  const dirs: string[] = [];
  const echo = await spawnListening(['-e', ECHO_SERVER]);
  try {
    for (const build of builds) {
      const dir = await mkdtemp(join(tmpdir(), `ra-bench-ws-ab-${build.name}-`));
      dirs.push(dir);
      await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN }));
      build.service = await spawnListening([build.cli, 'serve', '--data-dir', dir, '--port', '0']);
      console.log(`${build.name} ${build.cli}`);
    }
    await Promise.all(builds.map((build) => warmedUp(build.service!)));
    for (const connections of counts) {
      for (const build of builds) for (const list of [build.ratios, build.cpuRatios, build.cpuUs, build.overA]) list.length = 0;
      for (let round = 0; round < rounds; round += 1) {
        const order = builds.map((_, i) => builds[(i + round) % builds.length]!);
        const pair = [await PingPong.open(`ws://127.0.0.1:${echo.port}`, echo.child.pid!, connections, false)];
        for (const build of order) pair.push(await PingPong.open(`ws://127.0.0.1:${build.service!.port}/ws`, build.service!.child.pid!, connections, true));
        const load = loadavg()[0]!;
        const [e, ...measured] = await measurePair(pair);
        for (const clients of pair) clients.close();
        const of = new Map(order.map((build, i) => [build, measured[i]!]));
        const a = of.get(builds[0]!)!;
        for (const [build, m] of of) {
          build.ratios.push(m.rps / e!.rps);
          build.cpuRatios.push(e!.cpuUs / m.cpuUs);
          build.cpuUs.push(m.cpuUs);
          build.overA.push(m.rps / a.rps);
        }
        console.log(
          `${connections} connection(s), round ${round + 1} (load ${fmt(load)}): echo ${fmt(e!.rps, 0)}/s ${fmt(e!.cpuUs, 1)} us [client ${fmt(e!.clientCpuUs, 1)}]; ` +
            builds
              .map((build) => `${build.name} ${fmt(of.get(build)!.rps, 0)}/s ${fmt(of.get(build)!.cpuUs, 1)} us [${fmt(of.get(build)!.clientCpuUs, 1)}] (${fmt(of.get(build)!.rps / e!.rps)})`)
              .join('; '),
        );
      }
      console.log(
        `${connections} connection(s), medians of ${rounds}: ` +
          builds
            .map(
              (build) =>
                `${build.name} ratio ${fmt(median(build.ratios))}, CPU ratio ${fmt(median(build.cpuRatios))}, ${fmt(median(build.cpuUs), 1)} us, round trips over A's ${fmt(median(build.overA))}`,
            )
            .join('; '),
      );
    }
  } finally {
    await echo.stop();
    for (const build of builds) await build.service?.stop();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  }
}

void main();
