import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loginLimitKey } from '../../src/transport/http/allow-from';
import { FixedWindowLimiter } from '../../src/transport/http/rate-limit';
import { DERIVATION_NICE, MAX_CONCURRENT_DERIVATIONS, derivationLoad, MAX_WAITING_CHECKS, PasswordChecksBusy, decoyHash, hashPassword, verifyPassword } from '../../src/transport/auth/passwords';
import { cutPost, postJson, startService, type RunningService } from '../helpers/service';

// Attacks on `POST /auth`'s limit of 10 failed attempts per client address per 5 minutes
// (docs/protocol.md). Every test gets its own service: the limit is per address and all come from 127.0.0.1.
const ADA_PASSWORD = 'correct horse battery staple';
const BOB_PASSWORD = 'bob knows his own password';
let users: { username: string; password_hash: string }[];

before(async () => {
  users = [
    { username: 'ada', password_hash: await hashPassword(ADA_PASSWORD) },
    { username: 'bob', password_hash: await hashPassword(BOB_PASSWORD) },
  ];
});

async function withService(run: (svc: RunningService) => Promise<void>): Promise<void> {
  const svc = await startService({ users });
  try {
    await run(svc);
  } finally {
    await svc.dispose();
  }
}

/** A login's reply; status 0: the connection was closed before anything was read (an address over its limit, connection-gate.ts). */
const login = (svc: RunningService, username: string, password: string) =>
  postJson(`${svc.httpUrl}/auth`, { username, password }).catch((error: Error) => {
    if (error.message !== 'fetch failed') throw error;
    return { status: 0, headers: new Headers(), body: undefined, text: '' };
  });

/** Refused: answered 429, or (a new connection from an address already over the limit) closed unread. */
const REFUSED = [429, 0];

const statusCounts = (replies: { status: number }[]) => {
  const counts: Record<number, number> = {};
  for (const { status } of replies) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
};

describe('POST /auth limit under attack', () => {
  let svc: RunningService;
  before(async () => {
    svc = await startService({ users });
  });
  after(async () => {
    await svc?.dispose();
  });

  test('300 parallel wrong logins: only 10 are checked (401), the rest get 429 with Retry-After or are closed unread', async () => {
    const replies = await Promise.all(Array.from({ length: 300 }, (_, i) => login(svc, 'ada', `guess-${i}`)));
    const counts = statusCounts(replies);
    assert.equal(counts[401], 10, JSON.stringify(counts));
    assert.equal((counts[429] ?? 0) + (counts[0] ?? 0), 290, JSON.stringify(counts));
    for (const reply of replies.filter((r) => r.status === 429)) {
      assert.equal(reply.body!.code, 'rate_limited');
      assert.ok(Number(reply.headers.get('retry-after')) > 0);
    }
  });
});

test('a right password in the middle of a 100-request burst is refused, not accepted', async () => {
  await withService(async (svc) => {
    const burst = [
      ...Array.from({ length: 50 }, (_, i) => login(svc, 'ada', `guess-a${i}`)),
      login(svc, 'ada', ADA_PASSWORD),
      ...Array.from({ length: 49 }, (_, i) => login(svc, 'ada', `guess-b${i}`)),
    ];
    const replies = await Promise.all(burst);
    assert.ok(REFUSED.includes(replies[50].status), JSON.stringify(replies[50].body));
    assert.equal(replies.filter((r) => r.status === 200).length, 0);
    assert.equal(replies.filter((r) => r.status === 401).length, 10);
  });
});

test("one user's successful login does not clear failures of another from the same address", async () => {
  await withService(async (svc) => {
    for (let i = 0; i < 9; i += 1) assert.equal((await login(svc, 'ada', `guess-${i}`)).status, 401);
    assert.equal((await login(svc, 'bob', BOB_PASSWORD)).status, 200);
    assert.equal((await login(svc, 'ada', 'guess-9')).status, 401);
    const blocked = await login(svc, 'ada', 'guess-10');
    assert.ok(REFUSED.includes(blocked.status));
    // The limit is per address: the right password waits for the window too.
    assert.ok(REFUSED.includes((await login(svc, 'bob', BOB_PASSWORD)).status));
  });
});

test('successful logins do not use up the allowance', async () => {
  await withService(async (svc) => {
    for (let i = 0; i < 15; i += 1) assert.equal((await login(svc, 'bob', BOB_PASSWORD)).status, 200);
    for (let i = 0; i < 10; i += 1) assert.equal((await login(svc, 'ada', `guess-${i}`)).status, 401);
    assert.ok(REFUSED.includes((await login(svc, 'ada', ADA_PASSWORD)).status));
  });
});

test('password checks beyond the bounded queue are refused at once, the others still answered', async () => {
  const stored = users[0].password_hash;
  const checks = Array.from({ length: MAX_CONCURRENT_DERIVATIONS + MAX_WAITING_CHECKS + 5 }, (_, i) =>
    verifyPassword(i === 0 ? ADA_PASSWORD : 'wrong', stored).then(
      (valid) => ({ valid }),
      (error: unknown) => ({ error }),
    ),
  );
  const outcomes = await Promise.all(checks);
  const refused = outcomes.filter((o) => 'error' in o);
  assert.equal(refused.length, 5);
  for (const o of refused) assert.ok((o as { error: unknown }).error instanceof PasswordChecksBusy);
  assert.deepEqual(outcomes[0], { valid: true });
  assert.equal(outcomes.filter((o) => 'valid' in o && o.valid === false).length, MAX_CONCURRENT_DERIVATIONS + MAX_WAITING_CHECKS - 1);
  // The queue drained: a check now runs again.
  assert.equal(await verifyPassword(ADA_PASSWORD, stored), true);
});

test("one address's burst of password checks runs one at a time, and another address's check is not held behind all of it", async () => {
  const wrongs = Array.from({ length: 6 }, (_, i) => `guess-${i}`);
  const finished: string[] = [];
  let peak = 0;
  const watch = () => (peak = Math.max(peak, derivationLoad().running));
  const burst = wrongs.map((guess) =>
    verifyPassword(guess, users[0].password_hash, '10.0.0.1').then((valid) => {
      finished.push(guess);
      watch();
      return valid;
    }),
  );
  watch();
  const other = verifyPassword(BOB_PASSWORD, users[1].password_hash, '10.0.0.2').then((valid) => {
    finished.push('bob');
    return valid;
  });
  assert.deepEqual(await Promise.all(burst), Array(wrongs.length).fill(false));
  assert.equal(await other, true);
  // With one slot (2 cores) the burst's checks and bob's share it; with two (3+ cores) bob's starts beside
  // the burst's first, and the burst's never run two at once, so the slots never all hold the burst.
  assert.ok(peak <= MAX_CONCURRENT_DERIVATIONS, `${peak} checks ran at once`);
  // The burst's first check was running when bob's came: his is among the next, not the seventh.
  assert.ok(finished.indexOf('bob') <= MAX_CONCURRENT_DERIVATIONS, JSON.stringify(finished));
  assert.deepEqual(derivationLoad(), { running: 0, waiting: 0 });
});

/** Each thread of this process with its nice value (Linux: the nice value is a thread's own). */
function threadNiceValues(): Map<number, number> {
  const threads = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    threads.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
  }
  return threads;
}

test('password checks run on a thread of lower priority, the event loop keeps its own', { skip: process.platform !== 'linux' }, async () => {
  assert.equal(await verifyPassword('wrong', users[0].password_hash), false);
  const threads = threadNiceValues();
  assert.equal(threads.get(process.pid), 0, 'the main thread is not lowered');
  assert.ok([...threads.values()].includes(DERIVATION_NICE), JSON.stringify([...threads]));
});

test('a reserved attempt refunds once, and only in the window it was taken from', () => {
  let now = 0;
  const limiter = new FixedWindowLimiter(2, 60_000, () => now);
  const first = limiter.reserve('a');
  assert.equal(first.retryAfterSeconds, 0);
  first.refund();
  first.refund();
  assert.equal(limiter.reserve('a').retryAfterSeconds, 0);
  const stale = limiter.reserve('a');
  assert.equal(stale.retryAfterSeconds, 0);
  assert.equal(limiter.reserve('a').retryAfterSeconds, 60, 'the third counted attempt is over the limit');
  now = 60_000;
  assert.equal(limiter.reserve('a').retryAfterSeconds, 0);
  assert.equal(limiter.reserve('a').retryAfterSeconds, 0);
  stale.refund(); // from the previous window: changes nothing in this one
  assert.equal(limiter.reserve('a').retryAfterSeconds, 60);
});

test('login attempts are counted per IPv4 address and per IPv6 /64 (one host holds a whole /64)', () => {
  assert.equal(loginLimitKey('::ffff:10.0.0.7'), '10.0.0.7');
  assert.equal(loginLimitKey('10.0.0.7'), '10.0.0.7');
  assert.notEqual(loginLimitKey('10.0.0.7'), loginLimitKey('10.0.0.8'));
  assert.equal(loginLimitKey('2001:db8:1:2::1'), loginLimitKey('2001:db8:1:2:ffff:ffff:ffff:fffe'));
  assert.equal(loginLimitKey('2001:DB8:1:2::1'), loginLimitKey('2001:0db8:0001:0002:0:0:0:9'));
  assert.notEqual(loginLimitKey('2001:db8:1:2::1'), loginLimitKey('2001:db8:1:3::1'));
  assert.equal(loginLimitKey('::1'), loginLimitKey('::2'));
  assert.equal(loginLimitKey('2001:db8:1:2::1'), '2001:db8:1:2::/64');
});

test("an unknown user's password is checked against a decoy of the real hashes' shape, which no password matches", async () => {
  const [kind, N, r, p, salt, key] = decoyHash.split('$');
  const real = users[0].password_hash.split('$');
  assert.deepEqual([kind, N, r, p], real.slice(0, 4), 'the same parameters, so the check costs what a real one costs');
  assert.equal(Buffer.from(salt, 'base64').length, Buffer.from(real[4], 'base64').length);
  assert.equal(Buffer.from(key, 'base64').length, Buffer.from(real[5], 'base64').length);
  assert.equal(await verifyPassword(ADA_PASSWORD, decoyHash), false);
  assert.equal(await verifyPassword('', decoyHash), false);
});

test("a login body the network cut short is the client's: answered 400 (if anyone reads), logged as such (a burst in one counted line), no internal error, no stack, nothing of the body in the log", async () => {
  const svc = await startService({ users });
  try {
    const body = JSON.stringify({ username: 'ada', password: `${ADA_PASSWORD} half-sent-PWDMARK SPLIT the rest` });
    for (let i = 0; i < 12; i++) {
      const status = await cutPost(Number(new URL(svc.httpUrl).port), '/auth', body, body.indexOf('SPLIT'));
      assert.ok(status === -1 || status === 400, `a cut body answered ${status}`);
    }
    // Not a failed login: the right password still works, and a wrong one is still a 401.
    assert.equal((await login(svc, 'ada', ADA_PASSWORD)).status, 200);
    await svc.stop();
    const lines = (await readFile(join(svc.dataDir, 'service.log'), 'utf8')).split('\n').filter(Boolean);
    const events = lines.map((line) => JSON.parse(line) as { event: string; level: string; path?: string; count?: number });
    assert.deepEqual(
      events.filter((l) => l.event === 'http.handler_failed' || l.level === 'error'),
      [],
      'no internal error',
    );
    assert.deepEqual(
      lines.filter((l) => l.includes('PWDMARK') || l.includes(ADA_PASSWORD) || l.includes('stack')),
      [],
      'nothing of the body, no stack',
    );
    // Each cut logged once, at info: the window's first a line, all twelve in its counted line (written at the stop).
    const cuts = events.filter((l) => l.event.startsWith('http.body_incomplete'));
    assert.deepEqual(
      cuts.map((l) => [l.event, l.level, l.path, l.count]),
      [
        ['http.body_incomplete', 'info', '/auth', undefined],
        ['http.body_incomplete_burst', 'info', '/auth', 12],
      ],
    );
  } finally {
    await svc.dispose();
  }
});
