import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import WebSocket from 'ws';
import { postJson, startService, type RunningService } from '../helpers/service';

// Attacks on the WebSocket `auth` frame (issue 20): token and pairing-secret guesses from one address
// are limited as `POST /auth` is (10 failed logins per address per 5 minutes, docs/protocol.md), and a
// burst of them leaves a bounded log. Every test gets its own service: the limit is per address.

/**
 * What one WebSocket login attempt got: the upgrade refused (HTTP status), the answer and the close code,
 * or the connection closed before anything was read (an address over its limit, connection-gate.ts).
 */
interface Outcome {
  httpStatus?: number;
  code?: string;
  closeCode?: number;
  closedUnread?: true;
}

function attempt(svc: RunningService, frame: Record<string, unknown>, localAddress?: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(svc.wsUrl, localAddress ? { localAddress } : {});
    const outcome: Outcome = {};
    let upgraded = false;
    socket.on('upgrade', () => (upgraded = true));
    socket.on('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { code: string };
        resolve({ httpStatus: res.statusCode, code: body.code });
      });
    });
    socket.on('open', () => socket.send(JSON.stringify({ id: 1, ...frame })));
    socket.on('message', (data) => {
      outcome.code = (JSON.parse(data.toString()) as { code?: string }).code ?? 'ok';
      if (outcome.code === 'ok') socket.close(1000);
    });
    socket.on('close', (closeCode) => resolve(upgraded ? { ...outcome, closeCode } : { closedUnread: true }));
    socket.on('error', (error) => {
      // Before the upgrade an error is the refusal itself (a reset, or the 429 read above).
      if (upgraded) reject(error);
    });
  });
}

/** `count` attempts, `parallel` at a time. */
async function attempts(svc: RunningService, count: number, parallel: number, frame: (i: number) => Record<string, unknown>): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (let start = 0; start < count; start += parallel) {
    const batch = Array.from({ length: Math.min(parallel, count - start) }, (_, i) => attempt(svc, frame(start + i)));
    outcomes.push(...(await Promise.all(batch)));
  }
  return outcomes;
}

const tally = (outcomes: Outcome[]) => {
  const counts: Record<string, number> = {};
  for (const o of outcomes) {
    const key = o.closedUnread ? 'closed unread' : o.httpStatus ? `http ${o.httpStatus} ${o.code}` : `${o.code} ${o.closeCode}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
};

async function withService(run: (svc: RunningService) => Promise<void>, allowFrom?: string[]): Promise<void> {
  const svc = await startService({}, allowFrom ? { allowFrom } : {});
  try {
    await run(svc);
  } finally {
    await svc.dispose();
  }
}

test('300 parallel wrong tokens from one address: 10 are checked, the rest are refused unchecked', async () => {
  await withService(async (svc) => {
    const outcomes = await attempts(svc, 300, 300, (i) => ({ type: 'auth', token: `guess-${i}` }));
    const counts = tally(outcomes);
    assert.equal(counts['invalid_token 4401'], 10, JSON.stringify(counts));
    // Those already upgraded when the limit was reached get the envelope and 4429; those already read a
    // 429 before the upgrade; the rest are closed before anything of them is read.
    const refused = (counts['rate_limited 4429'] ?? 0) + (counts['http 429 rate_limited'] ?? 0) + (counts['closed unread'] ?? 0);
    assert.equal(refused, 290, JSON.stringify(counts));
  });
});

test('pairing-secret guesses count against the same limit, and then the right token is refused too', async () => {
  await withService(async (svc) => {
    const guesses = await attempts(svc, 40, 10, (i) => ({ type: 'auth', pairing_secret: `secret-guess-${i}` }));
    assert.deepEqual(tally(guesses), { 'invalid_token 4401': 10, 'closed unread': 30 });
    // A right credential from a blocked address is refused for the rest of the window, as POST /auth
    // refuses a right password: a guesser learns nothing while limited.
    const right = await attempt(svc, { type: 'auth', token: svc.token });
    assert.deepEqual(right, { closedUnread: true });
    // The limit is shared with POST /auth: one count of failed logins per address, whatever the door.
    await assert.rejects(postJson(`${svc.httpUrl}/auth`, { username: 'nobody', password: 'x' }), /fetch failed/);
  });
});

test('a blocked address does not block another: 127.0.0.2 still signs in', async () => {
  await withService(
    async (svc) => {
      await attempts(svc, 12, 12, (i) => ({ type: 'auth', token: `guess-${i}` }));
      assert.deepEqual(await attempt(svc, { type: 'auth', token: svc.token }), { closedUnread: true });
      const other = await attempt(svc, { type: 'auth', token: `still-wrong` }, '127.0.0.2');
      assert.deepEqual(other, { code: 'invalid_token', closeCode: 4401 });
      assert.deepEqual(await attempt(svc, { type: 'auth', token: svc.token }, '127.0.0.2'), { code: 'ok', closeCode: 1000 });
    },
    ['127.0.0.1', '127.0.0.2'],
  );
});

test('2,000 failed logins from one address add a bounded number of log lines, counted in one', async () => {
  const svc = await startService();
  let lines: { event: string; count?: number; address?: string }[];
  let checked: number;
  try {
    const logFile = join(svc.dataDir, 'service.log');
    const firstLine = (await readFile(logFile, 'utf8')).split('\n')[0];
    const before = (await readFile(logFile, 'utf8')).split('\n').filter(Boolean).length;
    const outcomes = await attempts(svc, 2000, 50, (i) => ({ type: 'auth', token: `guess-${i}` }));
    checked = outcomes.filter((o) => o.code === 'invalid_token').length;
    await svc.stop(); // The window's count is written when the service stops, as when the window ends.
    const text = await readFile(logFile, 'utf8');
    assert.equal(text.split('\n')[0], firstLine, 'the earlier lines are still there');
    const all = text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { event: string; count?: number; address?: string });
    lines = all.slice(before);
    assert.ok(lines.length < 20, `the burst added ${lines.length} lines`);
  } finally {
    await svc.dispose();
  }
  assert.equal(lines.filter((l) => l.event === 'auth.login_failed').length, 1);
  const burst = lines.filter((l) => l.event === 'auth.login_burst');
  assert.equal(burst.length, 1);
  assert.equal(burst[0].count, 2000);
  assert.equal(burst[0].address, '127.0.0.1');
  assert.equal(checked, 10);
});

test('30 connections that never send auth: closed 4408, logged once and counted, not 30 lines', async () => {
  const svc = await startService({}, { authTimeoutMs: 200 });
  let lines: { event: string; count?: number; kind?: string }[];
  try {
    const logFile = join(svc.dataDir, 'service.log');
    const before = (await readFile(logFile, 'utf8')).split('\n').filter(Boolean).length;
    const closes = await Promise.all(Array.from({ length: 30 }, () => new Promise<number>((resolve) => new WebSocket(svc.wsUrl).on('close', (code) => resolve(code)))));
    assert.deepEqual(new Set(closes), new Set([4408]));
    // Timeouts are logged like failed logins but not limited: the address still signs in.
    assert.deepEqual(await attempt(svc, { type: 'auth', token: svc.token }), { code: 'ok', closeCode: 1000 });
    await svc.stop();
    lines = (await readFile(logFile, 'utf8'))
      .split('\n')
      .filter(Boolean)
      .slice(before)
      .map((line) => JSON.parse(line) as { event: string; count?: number; kind?: string });
  } finally {
    await svc.dispose();
  }
  assert.ok(lines.length < 10, `the silent connections added ${lines.length} lines`);
  assert.equal(lines.filter((l) => l.event === 'auth.login_failed').length, 1);
  assert.deepEqual(
    lines.filter((l) => l.event === 'auth.login_burst').map((l) => [l.kind, l.count]),
    [['timeout', 30]],
  );
});
