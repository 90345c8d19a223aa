// Does storing bytes already on the machine tell another person they are there? (s36, dedup36.) The
// attacker's measurement: a real service (`dist/cli.js serve`, its own process) on 127.0.0.1 with two
// password users. Each trial ada uploads fresh random bytes X; then bob uploads X ("known": bytes another
// person stored) and fresh random bytes Y of the same size ("fresh"), in an order alternated every trial.
// Times attachment_end's answer (the round trip of its frame) and the whole upload (begin to end's answer),
// and checks that the two answers differ in nothing but their id. ada also uploads two small files a trial, so
// that the older upload each of bob's ends pushes out of his bound is never one ada still holds: its bytes
// are freed in both cases (an end that drops a blob another still refers to frees nothing, which is
// another question: see docs/design.md, "(s36, dedup36)"). Prints medians, quartiles and the
// known/fresh ratio of each size, for each build: A (`A=<other dist/cli.js>`, e.g. main's) and B (this
// tree's dist/cli.js unless given), and C if given (a variant) take turns trial by trial, so the machine's load falls on all alike.
//   [A=/tmp/base/dist/cli.js] [TRIALS=40,30,12] [SIZES=4096,1048576,20971520] npx tsx bench/dedup-timing.ts
// (`npm run build` first.)
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { sha256 } from '../test/helpers/attachments';
import { passwordUsers, postJson } from '../test/helpers/service';
import { TestClient } from '../test/helpers/ws-client';
import { ATTACHMENT_CHUNK_BYTES } from '../src/protocol';
import { fmt, percentile, spawnListening } from './util';

type Frame = Record<string, unknown>;
const PASSWORD = 'correct horse battery staple';
const TOKEN = 'bench-dedup-token-0123456789abcdef';

interface Build {
  name: string;
  cli: string;
  dir: string;
  service: Awaited<ReturnType<typeof spawnListening>>;
  ada: TestClient;
  bob: TestClient;
}

interface Timing {
  endMs: number;
  wholeMs: number;
}

async function login(port: number, username: string): Promise<TestClient> {
  const answer = await postJson(`http://127.0.0.1:${port}/auth`, { username, password: PASSWORD });
  return TestClient.authed(`ws://127.0.0.1:${port}/ws`, (answer.body!.data as { token: string }).token);
}

async function open(name: string, cli: string): Promise<Build> {
  const dir = await mkdtemp(join(tmpdir(), `ra-bench-dedup-${name}-`));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN, api_key: 'sk-unused', model: 'fake-model', users: await passwordUsers(PASSWORD, 'ada', 'bob') }));
  const service = await spawnListening([cli, 'serve', '--data-dir', dir, '--port', '0']);
  return { name, cli, dir, service, ada: await login(service.port, 'ada'), bob: await login(service.port, 'bob') };
}

function ok(frame: Frame, what: string): Frame {
  if (frame.status !== 'ok') throw new Error(`${what}: ${JSON.stringify(frame).slice(0, 300)}`);
  return frame.data as Frame;
}

/** One upload as a client makes it, timed; returns end's answer without its id. */
async function upload(client: TestClient, bytes: Buffer): Promise<Timing & { answer: Frame }> {
  const started = performance.now();
  const begun = ok(await client.request({ type: 'attachment_begin', name: 'notes.bin', mime: 'application/octet-stream', size: bytes.length, sha256: sha256(bytes) }), 'begin');
  const attachment_id = begun.attachment_id as string;
  for (let index = 0; index * ATTACHMENT_CHUNK_BYTES < bytes.length; index++) {
    const data = bytes.subarray(index * ATTACHMENT_CHUNK_BYTES, (index + 1) * ATTACHMENT_CHUNK_BYTES).toString('base64');
    ok(await client.request({ type: 'attachment_chunk', attachment_id, index, data }), 'chunk');
  }
  const ending = performance.now();
  const answer = ok(await client.request({ type: 'attachment_end', attachment_id }), 'end');
  const done = performance.now();
  const { attachment_id: _id, ...rest } = answer;
  return { endMs: done - ending, wholeMs: done - started, answer: rest };
}

const quartiles = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { p25: percentile(sorted, 25), p50: percentile(sorted, 50), p75: percentile(sorted, 75) };
};
const show = (values: number[]) => {
  const q = quartiles(values);
  return `${fmt(q.p50)} [${fmt(q.p25)}-${fmt(q.p75)}]`;
};

/** Of all pairs (known, fresh), how often known was the faster: 0.5 is a coin's guess. */
const fasterShare = (known: number[], fresh: number[]) => known.filter((k, i) => k < fresh[i]).length / known.length;

/**
 * The later drop (DROP_ROUNDS, default 4, a round each size): bob at his bound uploads 10 files of the size,
 * every other one bytes ada uploaded (and keeps this round), then 10 small files, each of whose ends pushes
 * out one of those 10 in turn; its time is grouped by whether another person still refers to the bytes
 * dropped (nothing freed) or not (the blob removed). Answers the two groups' end times.
 */
async function dropRound(build: Build, size: number): Promise<{ shared: number[]; alone: number[] }> {
  const shared = Array.from({ length: 5 }, () => randomBytes(size));
  for (const bytes of shared) await upload(build.ada, bytes);
  for (let i = 0; i < 5; i++) {
    await upload(build.bob, shared[i]);
    await upload(build.bob, randomBytes(size));
  }
  const times = { shared: [] as number[], alone: [] as number[] };
  for (let i = 0; i < 10; i++) (i % 2 === 0 ? times.shared : times.alone).push((await upload(build.bob, randomBytes(64))).endMs);
  return times;
}

async function main(): Promise<void> {
  const given = { A: process.env.A, B: process.env.B ?? join(__dirname, '..', 'dist', 'cli.js'), C: process.env.C };
  const sizes = (process.env.SIZES ?? `${4 * 1024},${1024 * 1024},${20 * 1024 * 1024}`).split(',').map(Number);
  const trials = (process.env.TRIALS ?? '40,30,12').split(',').map(Number);
  console.log(
    `load ${loadavg()
      .map((n) => fmt(n))
      .join(' ')}`,
  );
  const builds: Build[] = [];
  try {
    for (const [name, cli] of Object.entries(given)) if (cli) builds.push(await open(name, resolve(cli)));
    for (const build of builds) console.log(`${build.name} ${build.cli}`);
    for (const [s, size] of sizes.entries()) {
      const count = trials[s] ?? trials[trials.length - 1];
      const runs = new Map(builds.map((b) => [b.name, { known: [] as Timing[], fresh: [] as Timing[], differing: 0 }]));
      // One untimed round first: the page cache, the JIT and the sockets warm alike.
      for (const build of builds) {
        const x = randomBytes(size);
        await upload(build.ada, x);
        await upload(build.bob, x);
        await upload(build.bob, randomBytes(size));
      }
      for (let trial = 0; trial < count; trial++) {
        const order = trial % 2 === 0 ? builds : [...builds].reverse();
        for (const build of order) {
          const run = runs.get(build.name)!;
          const x = randomBytes(size);
          await upload(build.ada, x);
          // ada's own bound (her newest MAX_UNSENT_ATTACHMENTS) lets X go within 7 trials, before bob's drops it
          // (his 20 newest: 10 trials): the older upload each of bob's ends drops is then freed in both cases.
          for (let filler = 0; filler < 2; filler++) await upload(build.ada, randomBytes(64));
          const known = () => upload(build.bob, x);
          const fresh = () => upload(build.bob, randomBytes(size));
          const [k, f] = trial % 4 < 2 ? [await known(), await fresh()] : (([f2, k2]) => [k2, f2])([await fresh(), await known()]);
          run.known.push(k);
          run.fresh.push(f);
          if (JSON.stringify(k.answer) !== JSON.stringify(f.answer)) run.differing++;
        }
      }
      console.log(
        `\n${size} bytes, ${count} trials (ms: median [p25-p75]); load ${loadavg()
          .map((n) => fmt(n))
          .join(' ')}`,
      );
      for (const [name, run] of runs) {
        const endK = run.known.map((t) => t.endMs);
        const endF = run.fresh.map((t) => t.endMs);
        const allK = run.known.map((t) => t.wholeMs);
        const allF = run.fresh.map((t) => t.wholeMs);
        console.log(
          `  ${name} end:   known ${show(endK)}  fresh ${show(endF)}  known/fresh ${fmt(quartiles(endK).p50 / quartiles(endF).p50)}  known faster in ${fmt(100 * fasterShare(endK, endF), 0)}% of pairs`,
        );
        console.log(
          `  ${name} whole: known ${show(allK)}  fresh ${show(allF)}  known/fresh ${fmt(quartiles(allK).p50 / quartiles(allF).p50)}  known faster in ${fmt(100 * fasterShare(allK, allF), 0)}% of pairs`,
        );
        console.log(`  ${name} answers differing beyond their id: ${run.differing} of ${count}`);
      }
    }
    const dropRounds = Number(process.env.DROP_ROUNDS ?? 4);
    for (const size of dropRounds > 0 ? sizes : []) {
      const drops = new Map(builds.map((b) => [b.name, { shared: [] as number[], alone: [] as number[] }]));
      // bob at his bound first (MAX_UNSENT_ATTACHMENTS = 20), so that each later upload pushes one out.
      for (const build of builds) for (let i = 0; i < 20; i++) await upload(build.bob, randomBytes(64));
      for (let round = 0; round < dropRounds; round++) {
        for (const build of round % 2 === 0 ? builds : [...builds].reverse()) {
          const times = await dropRound(build, size);
          drops.get(build.name)!.shared.push(...times.shared);
          drops.get(build.name)!.alone.push(...times.alone);
        }
      }
      console.log(
        `\nthe later drop, ${size} bytes, ${dropRounds} rounds: a small upload's end pushing out bob's older upload (ms); load ${loadavg()
          .map((n) => fmt(n))
          .join(' ')}`,
      );
      for (const [name, { shared, alone }] of drops) {
        console.log(
          `  ${name} end: bytes another keeps ${show(shared)}  bytes no one else has ${show(alone)}  kept/freed ${fmt(quartiles(shared).p50 / quartiles(alone).p50)}  kept faster in ${fmt(100 * fasterShare(shared, alone), 0)}% of pairs`,
        );
      }
    }
  } finally {
    for (const build of builds) {
      build.ada.close();
      build.bob.close();
      await build.service.stop();
      await rm(build.dir, { recursive: true, force: true });
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
