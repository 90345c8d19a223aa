import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LogFields, Logger } from '../../src/log/logger';
import { LOGIN_FAILURE_LIMIT, LoginFailures, MAX_LOGGED_ADDRESSES, type LoginBurst } from '../../src/transport/auth/login-failures';
import { MAX_LIMITED_KEYS } from '../../src/transport/http/rate-limit';
import { waitFor } from '../helpers/temp';

// The one home of failed logins per address (src/transport/auth/login-failures.ts): what it logs and
// what it tells its listeners (the audit log's "login bursts"). The doors that use it are tested through
// real sockets in ws-login-limit.test.ts and auth-login-limit.test.ts.

/** A logger that keeps its lines, to count them. */
function recordingLogger(): Logger & { lines: { event: string; fields: LogFields }[] } {
  const lines: { event: string; fields: LogFields }[] = [];
  const write = (event: string, fields: LogFields = {}) => void lines.push({ event, fields });
  const logger = { lines, debug: write, info: write, warn: write, error: write, child: () => logger };
  return logger;
}

const fail = (failures: LoginFailures, address: string, kind: 'token' | 'pairing_secret' | 'password' = 'token') => {
  const attempt = failures.begin(address, kind);
  attempt.failed();
  return attempt.retryAfterSeconds;
};

test('2,000 failures from one address in a window: one line at the first, one counted line when the window ends', () => {
  let now = Date.parse('2026-11-26T05:00:00Z');
  const logger = recordingLogger();
  const failures = new LoginFailures(logger, () => now);
  const bursts: LoginBurst[] = [];
  failures.onBurst((burst) => bursts.push(burst));
  const waits = Array.from({ length: 2000 }, () => fail(failures, '10.0.0.7'));
  assert.equal(waits.filter((wait) => wait === 0).length, LOGIN_FAILURE_LIMIT, 'only the first 10 may be checked');
  assert.deepEqual(
    logger.lines.map((l) => l.event),
    ['auth.login_failed'],
  );
  assert.equal(bursts.length, 0);

  now += 60_000;
  fail(failures, '10.0.0.7');
  assert.deepEqual(
    logger.lines.map((l) => l.event),
    ['auth.login_failed', 'auth.login_burst', 'auth.login_failed'],
  );
  const expected = { address: '10.0.0.7', kind: 'token', count: 2000, refused: 2000 - LOGIN_FAILURE_LIMIT, window_seconds: 60, since: '2026-11-26T05:00:00.000Z' };
  assert.deepEqual(bursts, [expected]);
  assert.match(String(logger.lines[1].fields.message), /^2000 failed logins \(token\) from 10\.0\.0\.7 in 60 s$/);
  failures.flush();
  assert.equal(bursts.length, 2, 'the open window is told too');
  assert.equal(bursts[1].count, 1);
  assert.equal(logger.lines.length, 3, 'one failure alone is not logged twice');
});

test('a success is refunded and never logged; kinds are counted apart', () => {
  const logger = recordingLogger();
  const failures = new LoginFailures(logger);
  for (let i = 0; i < 50; i += 1) failures.begin('10.0.0.8', 'token').refund();
  assert.deepEqual(logger.lines, []);
  assert.equal(failures.begin('10.0.0.8', 'token').retryAfterSeconds, 0);
  fail(failures, '10.0.0.8', 'pairing_secret');
  fail(failures, '10.0.0.8', 'pairing_secret');
  fail(failures, '10.0.0.8', 'password');
  const bursts: LoginBurst[] = [];
  failures.onBurst((burst) => bursts.push(burst));
  failures.flush();
  assert.deepEqual(bursts.map((b) => [b.kind, b.count]).sort(), [
    ['pairing_secret', 2],
    ['password', 1],
  ]);
});

test('failures from many addresses log a bounded number of lines', () => {
  const logger = recordingLogger();
  const failures = new LoginFailures(logger);
  for (let i = 0; i < 2000; i += 1) fail(failures, `10.${i >> 8}.${i & 255}.1`);
  const first = logger.lines.filter((l) => l.event === 'auth.login_failed');
  assert.equal(first.length, MAX_LOGGED_ADDRESSES + 1);
  assert.equal(first.at(-1)!.fields.address, 'other addresses');
  failures.flush();
  const summaries = logger.lines.filter((l) => l.event === 'auth.login_burst');
  assert.deepEqual(
    summaries.map((l) => [l.fields.address, l.fields.count]),
    [['other addresses', 2000 - MAX_LOGGED_ADDRESSES]],
  );
});

test('a window ends on its own: its count is logged without another failure', async () => {
  const logger = recordingLogger();
  const failures = new LoginFailures(logger, Date.now, 50);
  for (let i = 0; i < 5; i += 1) fail(failures, '10.0.0.9');
  const burst = await waitFor(() => logger.lines.find((l) => l.event === 'auth.login_burst'), 'the burst line');
  assert.equal(burst.fields.count, 5);
  failures.flush();
});

test('attack: failures from 20,000 IPv6 /64s in one window keep a bounded memory, and a locked address stays locked', () => {
  const now = Date.parse('2026-11-26T05:00:00Z');
  const failures = new LoginFailures(recordingLogger(), () => now);
  for (let i = 0; i < LOGIN_FAILURE_LIMIT + 1; i += 1) fail(failures, '203.0.113.9');
  assert.ok(failures.begin('203.0.113.9', 'token').retryAfterSeconds > 0, 'locked before the flood');
  // One address per /64 (the limiter's key), as an attacker with a /48 can send from.
  for (let i = 0; i < 20_000; i += 1) fail(failures, `2001:db8:${(i >> 16) & 0xffff}:${(i & 0xffff).toString(16)}::1`);
  assert.ok(failures.limitedAddresses <= MAX_LIMITED_KEYS, `remembers ${failures.limitedAddresses} addresses`);
  assert.ok(failures.begin('203.0.113.9', 'token').retryAfterSeconds > 0, 'a locked address is not forgotten to make room');
  failures.flush();
});

test('a connection from an address over its limit is refused and counted as a refused attempt of the kind it last failed with', () => {
  let now = Date.parse('2026-11-26T05:00:00Z');
  const failures = new LoginFailures(recordingLogger(), () => now);
  const bursts: LoginBurst[] = [];
  failures.onBurst((burst) => bursts.push(burst));
  for (let i = 0; i < LOGIN_FAILURE_LIMIT; i += 1) fail(failures, '10.0.0.9', 'pairing_secret');
  assert.equal(failures.refusesConnection('10.0.0.10'), false, 'another address is not refused');
  assert.equal(failures.refusesConnection('10.0.0.9'), true);
  assert.equal(failures.refusesConnection('::ffff:10.0.0.9'), true, 'the same address on a dual-stack socket');
  now += 5 * 60_000;
  assert.equal(failures.refusesConnection('10.0.0.9'), false, 'the window ended: it may try again');
  failures.flush();
  assert.deepEqual(
    bursts.map((b) => [b.address, b.kind, b.count, b.refused]),
    [['10.0.0.9', 'pairing_secret', LOGIN_FAILURE_LIMIT + 2, 2]],
  );
});
