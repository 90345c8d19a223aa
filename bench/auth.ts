// Auth burst benchmark (issue 25): 600 parallel wrong logins (POST /auth, and WebSocket auth frames with
// wrong tokens) must not stall an unrelated chat. The figure of the issue is the chat's longest turn
// during a burst against the chat alone, in the same run; a longest turn is one sample of the machine's
// worst moment (on a shared disk, most often an fsync), so the bench also gives the p99 and the median of
// every turn of each period, and the service's own CPU per refused connection measured with no chat.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { Service } from '../src/service';
import { hashPassword } from '../src/transport/auth/passwords';
import { instantProvider } from './agent';
import { fmt, percentile } from './util';

const BURST = 600;

/**
 * The attacker: one process, started (and its `ws` loaded) before anything is measured, so neither a
 * node start nor the attacker's own client work runs in the service's event loop. It reads one burst a
 * line from stdin (`{ port, path, spread }`) and answers one line of status counts when every connection
 * of it settled. Every burst comes from addresses never seen before: one fresh loopback address for all
 * 600 (its first 10 are checked, then the address is over its limit), or 600 fresh ones (each checked),
 * so no round measures only the refusals that an earlier round's failures earned.
 */
const ATTACKER = `
const http = require('node:http');
const WebSocket = require('ws');
let next = 1000;
const fresh = () => { const k = next++; return '127.' + (1 + Math.floor(k / 62500)) + '.' + (1 + (Math.floor(k / 250) % 250)) + '.' + (1 + (k % 250)); };
const body = JSON.stringify({ username: 'ada', password: 'wrong guess' });
function burst({ port, path, spread, size }, done) {
  const counts = {};
  let left = size;
  const count = (key) => { counts[key] = (counts[key] || 0) + 1; if (--left === 0) done(counts); };
  const single = fresh();
  for (let i = 0; i < size; i += 1) {
    const localAddress = spread ? fresh() : single;
    if (path === '/ws') {
      const socket = new WebSocket('ws://127.0.0.1:' + port + '/ws', { localAddress });
      let settled = false;
      const once = (key) => { if (!settled) { settled = true; count(key); } };
      socket.on('unexpected-response', (_req, res) => { res.resume(); once(res.statusCode); });
      socket.on('open', () => socket.send(JSON.stringify({ type: 'auth', token: 'wrong guess ' + i })));
      socket.on('close', (code) => once(code));
      socket.on('error', (e) => { if (!/Unexpected server response/.test(e.message)) once(e.code); });
      continue;
    }
    let settled = false;
    const once = (key) => { if (!settled) { settled = true; count(key); } };
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', localAddress, agent: false,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => once(res.statusCode));
    });
    req.on('error', (e) => once(e.code));
    req.end(body);
  }
}
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => burst(JSON.parse(line), (counts) => console.log(JSON.stringify(counts))));
console.log('ready');
`;

export class Attacker {
  private readonly answers: ((line: string) => void)[] = [];
  private constructor(private readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => this.answers.shift()?.(line));
  }

  /**
   * Started at the lowest priority: on these 2 cores its client work (600 sockets made, answers read)
   * would otherwise take the core the service needs, a cost a remote attacker's machine pays. The
   * service's work is the same: every connection still arrives at once (the kernel queues them).
   */
  static async start(): Promise<Attacker> {
    const child = spawn(process.execPath, ['-e', ATTACKER], { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      setPriority(child.pid!, 19);
    } catch {
      // Not allowed here: the figures then include the attacker's competition for the cores.
    }
    const attacker = new Attacker(child);
    await new Promise<string>((resolve) => attacker.answers.push(resolve));
    return attacker;
  }

  fire(port: number, path: string, spread: boolean): Promise<Record<string, number>> {
    return new Promise((resolve) => {
      this.answers.push((line) => resolve(JSON.parse(line)));
      this.child.stdin!.write(`${JSON.stringify({ port, path, spread, size: BURST })}\n`);
    });
  }

  stop(): void {
    this.child.kill();
  }
}

interface Period {
  /** Every turn's duration, ms. */
  turns: number[];
  loopStallMs: number;
  durationMs: number;
}

/** Chat turns one after another until `until` settles (at least `minTurns`). */
async function turnsWhile(service: Service, until: Promise<unknown>, minTurns = 20): Promise<Period> {
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  let done = false;
  void until.finally(() => (done = true));
  let conversationId: string | undefined;
  const turns: number[] = [];
  const started = performance.now();
  while (!done || turns.length < minTurns) {
    const t0 = performance.now();
    const reply = await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } });
    turns.push(performance.now() - t0);
    conversationId = reply.conversation_id;
  }
  loop.disable();
  return { turns, loopStallMs: loop.max / 1e6, durationMs: performance.now() - started };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
/**
 * Rounds of the four periods, their order rotated each round so every period meets every moment of the
 * machine alike. A period's longest turn is one sample; the median of the rounds' is the issue's figure.
 */
const ROUNDS = 7;

type Kind = 'alone' | 'empty' | 'login' | 'ws';
const PATHS: Record<Exclude<Kind, 'alone'>, string> = { empty: '/nowhere', login: '/auth', ws: '/ws' };

/** CPU time of this process's main thread (the service's event loop), in microseconds (Linux; NaN elsewhere). */
function mainThreadCpuUs(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}
/** Linux's USER_HZ, the unit of /proc's CPU times (100 on every mainstream architecture). */
const CLOCK_TICKS = 100;

/**
 * The service's CPU for one burst with no chat running, per connection, over BURSTS_FOR_CPU bursts: every
 * thread of this process (the event loop, password checks), and the event loop alone.
 */
async function cpuPerConnection(attacker: Attacker, port: number, path: string, spread: boolean): Promise<{ all: number; loop: number }> {
  const before = process.cpuUsage();
  const loopBefore = mainThreadCpuUs();
  for (let i = 0; i < BURSTS_FOR_CPU; i += 1) {
    await attacker.fire(port, path, spread);
    await sleep(100); // the last closes and password checks
  }
  const used = process.cpuUsage(before);
  return { all: (used.user + used.system) / BURST / BURSTS_FOR_CPU, loop: (mainThreadCpuUs() - loopBefore) / BURST / BURSTS_FOR_CPU };
}
const BURSTS_FOR_CPU = 3;

/**
 * Four periods a round: the chat alone; the chat during a burst of the same size to a path that does
 * nothing (404: the cost of accepting 600 connections at once); during the POST /auth burst; during the
 * WebSocket one. The login figures are given against the chat alone (the issue's goal) and the 404 burst.
 */
export async function benchAuth(): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-auth-'));
  const users = [{ username: 'ada', password_hash: await hashPassword('the right password') }];
  await writeFile(join(dir, 'service.json'), JSON.stringify({ users, permission_mode: 'allow', workspace: dir }));
  const service = await Service.open({ dataDir: dir, host: '127.0.0.1', port: 0, allowFrom: ['127.*.*.*'], provider: () => instantProvider(0) });
  const attacker = await Attacker.start();
  const results: Record<string, number> = {};
  try {
    const { port } = await service.start();
    await turnsWhile(service, sleep(300)); // warm-up
    for (const spread of [false, true]) {
      const label = spread ? `${BURST} addresses` : 'one address';
      const key = spread ? 'spread' : 'single';
      const kinds: Kind[] = ['alone', 'empty', 'login', 'ws'];
      const periods = Object.fromEntries(kinds.map((kind) => [kind, [] as Period[]])) as Record<Kind, Period[]>;
      const outcomes: Partial<Record<Kind, Record<string, number>>> = {};
      // A burst once before measuring: the alone period lasts as long as a burst does.
      await attacker.fire(port, '/auth', spread);
      let burstMs = (await turnsWhile(service, attacker.fire(port, '/auth', spread), 1)).durationMs;
      for (let round = 0; round < ROUNDS; round += 1) {
        for (let i = 0; i < kinds.length; i += 1) {
          const kind = kinds[(i + round) % kinds.length];
          if (kind === 'alone') {
            periods.alone.push(await turnsWhile(service, sleep(burstMs)));
            continue;
          }
          const attack = attacker.fire(port, PATHS[kind], spread);
          const period = await turnsWhile(service, attack);
          outcomes[kind] = await attack;
          periods[kind].push(period);
          if (kind === 'login') burstMs = period.durationMs;
        }
      }
      const longest = (kind: Kind) => median(periods[kind].map((p) => Math.max(...p.turns)));
      const pooled = (kind: Kind, p: number) => percentile(sorted(periods[kind].flatMap((period) => period.turns)), p);
      const stall = (kind: Kind) => median(periods[kind].map((p) => p.loopStallMs));
      const cpu = {
        empty: await cpuPerConnection(attacker, port, PATHS.empty, spread),
        login: await cpuPerConnection(attacker, port, PATHS.login, spread),
        ws: await cpuPerConnection(attacker, port, PATHS.ws, spread),
      };
      const turnCount = (kind: Kind) => periods[kind].reduce((n, p) => n + p.turns.length, 0);
      console.log(
        `auth burst, ${BURST} wrong logins from ${label}, ${ROUNDS} rounds; chat turns (longest: median of the rounds' / p99 / p50 of every turn, ms), event-loop stall (median of the rounds' longest), turns:`,
      );
      for (const kind of kinds) {
        const name = { alone: 'the chat alone', empty: `${BURST} requests to a 404`, login: `${BURST} wrong POST /auth`, ws: `${BURST} wrong WebSocket tokens` }[kind];
        const outcome = outcomes[kind] ? ` (last round ${JSON.stringify(outcomes[kind])})` : '';
        console.log(`  ${name}: ${fmt(longest(kind))} / ${fmt(pooled(kind, 99))} / ${fmt(pooled(kind, 50))} ms, stall ${fmt(stall(kind))} ms, ${turnCount(kind)} turns${outcome}`);
      }
      // Issue 25's goals against the chat alone: under 2x from one address, under 3x from 600.
      const goal = spread ? 3 : 2;
      for (const kind of ['login', 'ws'] as const) {
        const vsAlone = longest(kind) / longest('alone');
        const p99VsAlone = pooled(kind, 99) / pooled('alone', 99);
        results[`${kind === 'login' ? 'burst' : 'ws_burst'}_${key}_vs_alone`] = vsAlone;
        results[`${kind === 'login' ? 'burst' : 'ws_burst'}_${key}_p99_vs_alone`] = p99VsAlone;
        results[`${kind === 'login' ? 'burst' : 'ws_burst'}_${key}_vs_404_burst`] = longest(kind) / longest('empty');
        console.log(
          `  ${kind === 'login' ? 'POST /auth' : 'WebSocket'}: longest turn ${fmt(vsAlone)}x the chat alone ${vsAlone < goal ? 'ok' : `OVER GOAL (${goal}x)`}, ` +
            `p99 ${fmt(p99VsAlone)}x, p50 ${fmt(pooled(kind, 50) / pooled('alone', 50))}x; longest ${fmt(longest(kind) / longest('empty'))}x the 404 burst; ` +
            `service CPU a connection ${fmt(cpu[kind].all, 0)} us, event loop ${fmt(cpu[kind].loop, 0)} us (404: ${fmt(cpu.empty.all, 0)} / ${fmt(cpu.empty.loop, 0)} us)`,
        );
        results[`${kind === 'login' ? 'burst' : 'ws_burst'}_${key}_cpu_us`] = cpu[kind].all;
        results[`${kind === 'login' ? 'burst' : 'ws_burst'}_${key}_loop_cpu_us`] = cpu[kind].loop;
      }
    }
  } finally {
    attacker.stop();
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return results;
}

if (require.main === module) void benchAuth();
