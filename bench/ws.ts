import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { fmt, spawnListening } from './util';

const TOKEN = 'bench-access-token-0123456789abcdef0123';
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

/**
 * Round trips per second over a fixed window after a warm-up: each client sends its next frame when the
 * reply comes; and the server's CPU time per round trip meanwhile (us).
 */
async function measure(url: string, pid: number, connections: number, auth: boolean, durationMs = 3000): Promise<{ rps: number; cpuUs: number }> {
  const frame = JSON.stringify({ type: 'get_config' });
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
  let count = 0;
  let counting = false;
  let running = true;
  const finished = sockets.map(
    (ws) =>
      new Promise<void>((resolve) => {
        ws.on('message', () => {
          if (counting) count += 1;
          if (running) ws.send(frame);
          else resolve();
        });
        ws.send(frame);
      }),
  );
  await new Promise((resolve) => setTimeout(resolve, 500));
  counting = true;
  const started = performance.now();
  const cpuBefore = cpuNs(pid);
  await new Promise((resolve) => setTimeout(resolve, durationMs));
  counting = false;
  const cpuUs = (cpuNs(pid) - cpuBefore) / 1000 / count;
  const elapsed = (performance.now() - started) / 1000;
  running = false;
  await Promise.all(finished);
  for (const ws of sockets) ws.terminate();
  return { rps: count / elapsed, cpuUs };
}

export async function benchWebSocket(): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-ws-'));
  await writeFile(join(dir, 'service.json'), JSON.stringify({ auth_token: TOKEN }));
  const echo = await spawnListening(['-e', ECHO_SERVER]);
  const service = await spawnListening([join(__dirname, '..', 'dist', 'cli.js'), 'serve', '--data-dir', dir, '--port', '0']);
  const results: Record<string, number> = {};
  try {
    for (const connections of [1, 64]) {
      // Interleave baseline and service twice and keep the best of each, to damp machine noise.
      let bestEcho = 0;
      let bestService = 0;
      let echoCpu = Infinity;
      let serviceCpu = Infinity;
      for (let round = 0; round < 2; round += 1) {
        const e = await measure(`ws://127.0.0.1:${echo.port}`, echo.child.pid!, connections, false);
        const s = await measure(`ws://127.0.0.1:${service.port}/ws`, service.child.pid!, connections, true);
        bestEcho = Math.max(bestEcho, e.rps);
        bestService = Math.max(bestService, s.rps);
        echoCpu = Math.min(echoCpu, e.cpuUs);
        serviceCpu = Math.min(serviceCpu, s.cpuUs);
      }
      results[`echo_rps_${connections}`] = bestEcho;
      results[`service_rps_${connections}`] = bestService;
      results[`ratio_${connections}`] = bestService / bestEcho;
      results[`cpu_ratio_${connections}`] = echoCpu / serviceCpu;
      console.log(
        `get_config round trips, ${connections} connection(s): service ${fmt(bestService, 0)}/s, bare ws echo ${fmt(bestEcho, 0)}/s, ratio ${fmt(bestService / bestEcho)} (goal >= ${connections === 1 ? '0.8' : '0.75'}); ` +
          `server CPU a round trip: service ${fmt(serviceCpu, 1)} us, echo ${fmt(echoCpu, 1)} us, ratio ${fmt(echoCpu / serviceCpu)}`,
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
