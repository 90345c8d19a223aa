import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { fmt, spawnListening } from './util';

export const TOKEN = 'bench-access-token-0123456789abcdef0123';
export const ECHO_SERVER = `
const { WebSocketServer } = require('ws');
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 }, () => console.log('listening on 127.0.0.1:' + wss.address().port));
wss.on('connection', (ws) => ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary })));
`;

/**
 * The CPU time a process's threads have run, in ns (Linux: /proc/<pid>/task/<tid>/schedstat), or NaN.
 * Round trips per second follow the machine's load; the server's CPU per round trip much less.
 */
function cpuNs(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/task`).reduce((sum, tid) => sum + Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]), 0);
  } catch {
    return NaN;
  }
}

/** Clients of one server, each sending its next frame when the reply comes, while switched on. */
export class PingPong {
  /** Replies while on; replies in all (those of the frames in flight at a switch-off too). */
  counted = 0;
  replies = 0;
  private on = false;
  private inFlight = 0;
  private drained: () => void = () => undefined;

  private constructor(
    private readonly sockets: WebSocket[],
    readonly pid: number,
  ) {
    for (const ws of sockets) {
      ws.on('message', () => {
        this.replies += 1;
        if (this.on) {
          this.counted += 1;
          ws.send(FRAME);
        } else if (--this.inFlight === 0) this.drained();
      });
    }
  }

  static async open(url: string, pid: number, connections: number, auth: boolean): Promise<PingPong> {
    const sockets: WebSocket[] = [];
    for (let i = 0; i < connections; i += 1) {
      const ws = new WebSocket(url);
      await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
      if (auth) {
        ws.send(JSON.stringify({ type: 'auth', token: TOKEN }));
        await new Promise((resolve) => ws.once('message', resolve));
      }
      sockets.push(ws);
    }
    return new PingPong(sockets, pid);
  }

  start(): void {
    this.on = true;
    this.inFlight = this.sockets.length;
    for (const ws of this.sockets) ws.send(FRAME);
  }

  /** Switches off; resolves once every frame in flight was answered (none is left to the other server's slice). */
  stop(): Promise<void> {
    this.on = false;
    return new Promise((resolve) => (this.drained = resolve));
  }

  close(): void {
    for (const ws of this.sockets) ws.terminate();
  }
}

const FRAME = JSON.stringify({ type: 'get_config' });
const SLICES = 20;
const SLICE_MS = 200;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The baseline's and the service's round trips in alternating slices of SLICE_MS (SLICES each, after a
 * warm-up): both see the same machine load, which on these shared machines moves within seconds (two
 * windows of seconds apart, best of each, gave ratios from 0.3 to 3 on the same build). Round trips per
 * second over each one's own slices, and its server's CPU time per round trip (us).
 */
export async function measurePair(pair: PingPong[]): Promise<{ rps: number; cpuUs: number; clientCpuUs: number }[]> {
  const totals = pair.map(() => ({ ms: 0, counted: 0, replies: 0, cpuNs: 0, clientUs: 0 }));
  for (const clients of pair) {
    clients.start();
    await sleep(500);
    await clients.stop();
  }
  for (let slice = 0; slice < SLICES * pair.length; slice += 1) {
    const index = slice % pair.length;
    const clients = pair[index]!;
    const total = totals[index]!;
    const [counted, replies, cpu, client, started] = [clients.counted, clients.replies, cpuNs(clients.pid), process.cpuUsage(), performance.now()];
    clients.start();
    await sleep(SLICE_MS);
    total.ms += performance.now() - started;
    total.counted += clients.counted - counted;
    await clients.stop();
    total.replies += clients.replies - replies;
    total.cpuNs += cpuNs(clients.pid) - cpu;
    const used = process.cpuUsage(client);
    total.clientUs += used.user + used.system;
  }
  return totals.map((t) => ({ rps: (t.counted / t.ms) * 1000, cpuUs: t.cpuNs / 1000 / t.replies, clientCpuUs: t.clientUs / t.replies }));
}

/**
 * Resolves once the service's start is over: it logged the end of its warm-up (`service.warmed_up`, or
 * cut short) and its threads then used under a tenth of a core for a quarter of a second. Until then it
 * also runs its warm-up (a practice turn, the instruction files, git: 650-930 ms of CPU over 1.8-2.9 s
 * after listening on this machine, and about 120 ms more the second after its line, V8's helper threads
 * finishing), which fell in the first slices of the 1-connection row: counted in the service's CPU a
 * round trip and slowing its round trips, though the row is about get_config's.
 */
export async function warmedUp(service: { child: { pid?: number }; output: () => string }): Promise<void> {
  const deadline = performance.now() + 60_000;
  const late = () => {
    if (performance.now() > deadline) throw new Error(`the service's start did not settle:\n${service.output()}`);
  };
  while (!/service\.warm(ed_up|_up_cut_short)/.test(service.output())) {
    late();
    await sleep(20);
  }
  for (let before = cpuNs(service.child.pid!); ;) {
    await sleep(250);
    const now = cpuNs(service.child.pid!);
    if (!(now - before > 25e6)) return;
    late();
    before = now;
  }
}

export async function benchWebSocket(): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-ws-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN }));
  const echo = await spawnListening(['-e', ECHO_SERVER]);
  const service = await spawnListening([join(__dirname, '..', 'dist', 'cli.js'), 'serve', '--data-dir', dir, '--port', '0']);
  const results: Record<string, number> = {};
  try {
    await warmedUp(service);
    for (const connections of [1, 64]) {
      const pair = [
        await PingPong.open(`ws://127.0.0.1:${echo.port}`, echo.child.pid!, connections, false),
        await PingPong.open(`ws://127.0.0.1:${service.port}/ws`, service.child.pid!, connections, true),
      ];
      const [e, s] = await measurePair(pair);
      for (const clients of pair) clients.close();
      const ratio = s!.rps / e!.rps;
      const cpuRatio = e!.cpuUs / s!.cpuUs;
      Object.assign(results, { [`echo_rps_${connections}`]: e!.rps, [`service_rps_${connections}`]: s!.rps, [`ratio_${connections}`]: ratio, [`cpu_ratio_${connections}`]: cpuRatio });
      console.log(
        `get_config round trips, ${connections} connection(s), ${SLICES} alternating ${SLICE_MS} ms slices each: service ${fmt(s!.rps, 0)}/s, bare ws echo ${fmt(e!.rps, 0)}/s, ratio ${fmt(ratio)} (goal >= ${connections === 1 ? '0.8' : '0.75'}); ` +
          `server CPU a round trip: service ${fmt(s!.cpuUs, 1)} us, echo ${fmt(e!.cpuUs, 1)} us, ratio ${fmt(cpuRatio)}`,
      );
    }
  } finally {
    await echo.stop();
    await service.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return results;
}

if (require.main === module) void benchWebSocket();
