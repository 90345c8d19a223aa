import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { authTokenProblem, bearerToken, isAuthorized, tokensEqual } from '../../src/relay/auth';
import { addressKey, lastForwardedFor } from '../../src/relay/client-address';
import { parseMachineFrame, utf8LengthExceeds } from '../../src/relay/frames';
import { clampCloseReason } from '../../src/protocol/relay-frames';
import { notRegistered, parseRegisterBody, routeRequest, socketUrl, tooManyPending } from '../../src/relay/http';
import { RefusalLog } from '../../src/relay/refusal-log';
import { TokenBucket } from '../../src/relay/token-bucket';
import type { Logger } from '../../src/log/logger';

const TOKEN = 'relay-core-test-token-0123456789abcdef';

describe('relay core', () => {
  test('addressKey: IPv4 as it is, IPv4-mapped IPv6 as IPv4, IPv6 grouped by its /64', () => {
    assert.equal(addressKey('203.0.113.7'), '203.0.113.7');
    assert.equal(addressKey('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(addressKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(addressKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
    assert.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(addressKey('::1'), '0:0:0:0::/64');
    assert.equal(addressKey(undefined), 'unknown');
    assert.equal(lastForwardedFor('198.51.100.1, 203.0.113.9'), '203.0.113.9');
    assert.equal(lastForwardedFor(['198.51.100.1', '203.0.113.9 ']), '203.0.113.9');
    assert.equal(lastForwardedFor(undefined), undefined);
  });

  test('RefusalLog: one line per address per window; the counts add up to every refusal', () => {
    const lines: Record<string, unknown>[] = [];
    const log = { warn: (_event: string, fields: Record<string, unknown>) => lines.push(fields) } as unknown as Logger;
    let now = 0;
    const refusals = new RefusalLog(log, 1000, () => now);
    for (let i = 0; i < 500; i += 1) refusals.refused('a', tooManyPending());
    refusals.refused('b', notRegistered());
    assert.deepEqual(
      lines.map((l) => [l.address, l.reason, l.refused]),
      [
        ['a', 'rate_limited', 1],
        ['b', 'not_found', 1],
      ],
    );
    now = 999;
    assert.equal(refusals.flush(), 1000);
    assert.equal(lines.length, 2, 'nothing before the window ends');
    now = 1000;
    refusals.flush();
    assert.deepEqual(
      lines.slice(2).map((l) => [l.address, l.refused]),
      [['a', 499]],
    );
    now = 2000;
    assert.equal(refusals.flush(), undefined, 'quiet windows are forgotten');
    assert.equal(lines.length, 3);
  });

  test('tokensEqual compares whole tokens, whatever their lengths', () => {
    assert.equal(tokensEqual(TOKEN, TOKEN), true);
    assert.equal(tokensEqual(`${TOKEN}x`, TOKEN), false);
    assert.equal(tokensEqual(TOKEN.slice(0, -1), TOKEN), false);
    assert.equal(tokensEqual('', TOKEN), false);
    assert.equal(tokensEqual(TOKEN.replace(/.$/, 'g'), TOKEN), false);
    assert.equal(tokensEqual(TOKEN + TOKEN, TOKEN), false);
  });

  test('Authorization: Bearer is parsed strictly', () => {
    assert.equal(bearerToken(`Bearer ${TOKEN}`), TOKEN);
    assert.equal(bearerToken(`bearer  ${TOKEN} `), TOKEN);
    assert.equal(bearerToken(`Basic ${TOKEN}`), undefined);
    assert.equal(bearerToken(`Bearer ${TOKEN} extra`), undefined);
    assert.equal(bearerToken(undefined), undefined);
    assert.equal(isAuthorized(`Bearer ${TOKEN}`, TOKEN), true);
    assert.equal(isAuthorized(null, TOKEN), false);
  });

  test('an AUTH_TOKEN shorter than 32 characters is a problem, named without quoting it', () => {
    assert.equal(authTokenProblem(TOKEN), undefined);
    assert.equal(authTokenProblem(undefined), 'AUTH_TOKEN is not set');
    const problem = authTokenProblem('x'.repeat(31));
    assert.match(problem ?? '', /at least 32/);
    assert.ok(!problem?.includes('xxxx'));
  });

  test('the token bucket allows a burst, then the rate, refilled from the clock', () => {
    let now = 0;
    const bucket = new TokenBucket(30, 120, () => now);
    for (let i = 0; i < 120; i += 1) assert.equal(bucket.take(), true);
    assert.equal(bucket.take(), false);
    now += 100; // 3 tokens
    assert.deepEqual([bucket.take(), bucket.take(), bucket.take(), bucket.take()], [true, true, true, false]);
    now += 60_000;
    let taken = 0;
    while (bucket.take()) taken += 1;
    assert.equal(taken, 120);
  });

  test('UTF-8 length limits count bytes, not UTF-16 units', () => {
    assert.equal(utf8LengthExceeds('a'.repeat(10), 10), false);
    assert.equal(utf8LengthExceeds('a'.repeat(11), 10), true);
    assert.equal(utf8LengthExceeds('é'.repeat(5), 10), false);
    assert.equal(utf8LengthExceeds('é'.repeat(6), 10), true);
    assert.equal(utf8LengthExceeds('😀'.repeat(3), 10), true);
  });

  test('close reasons are cut to 123 UTF-8 bytes without splitting a character', () => {
    assert.equal(clampCloseReason('short'), 'short');
    const cut = clampCloseReason('é'.repeat(100));
    assert.equal(new TextEncoder().encode(cut).length, 122);
  });

  test('close reasons are cut by whole characters: never a lone surrogate, never over 123 bytes (s23, polish23)', () => {
    const PAIR = '\u{1F600}';
    const bytes = (text: string) => new TextEncoder().encode(text).length;
    const cases: [string, string][] = [
      [`${'中'.repeat(40)}${PAIR}x`, '中'.repeat(40)],
      [`${'a'.repeat(120)}${PAIR}b`, 'a'.repeat(120)],
      [`${'a'.repeat(119)}${PAIR}b`, `${'a'.repeat(119)}${PAIR}`],
      [`${'a'.repeat(122)}${PAIR}`, 'a'.repeat(122)],
      [PAIR.repeat(40), PAIR.repeat(30)],
      ['a\ud800b', 'a\ufffdb'],
    ];
    for (const [reason, expected] of cases) {
      const cut = clampCloseReason(reason);
      assert.ok(cut.isWellFormed() && bytes(cut) <= 123, JSON.stringify(cut.slice(-4)));
      assert.equal(cut, expected, JSON.stringify(reason.slice(-6)));
    }
  });

  test('machine frames: data and close are accepted, anything else is not', () => {
    assert.deepEqual(parseMachineFrame('{"t":"data","c":"a","d":"x"}'), { t: 'data', c: 'a', d: 'x' });
    assert.deepEqual(parseMachineFrame('{"t":"close","c":"a","code":4401,"reason":"r"}'), { t: 'close', c: 'a', code: 4401, reason: 'r' });
    for (const bad of ['x', '[]', 'null', '{"t":"open","c":"a"}', '{"t":"data","c":"a"}', '{"t":"close","c":"a","code":1000}', '{"t":"data","c":"","d":"x"}']) {
      assert.equal(parseMachineFrame(bad), undefined, bad);
    }
  });

  test('routes: health, register, sockets by role, statics, and refusals', () => {
    const route = (method: string, path: string, authorization?: string, upgrade = true) => routeRequest({ method, url: new URL(path, 'https://relay.example'), authorization, upgrade }, TOKEN);
    assert.deepEqual(route('GET', '/health'), { kind: 'health' });
    assert.deepEqual(route('POST', '/register', `Bearer ${TOKEN}`), { kind: 'register' });
    assert.equal(route('POST', '/register', 'Bearer nope').kind, 'answer');
    assert.deepEqual(route('GET', '/ws?machine_id=m-1'), { kind: 'socket', role: 'client', machineId: 'm-1' });
    assert.deepEqual(route('GET', '/ws?machine_id=m-1&role=machine', `Bearer ${TOKEN}`), { kind: 'socket', role: 'machine', machineId: 'm-1' });
    const statusOf = (r: ReturnType<typeof route>) => (r.kind === 'answer' ? r.answer.status : 0);
    assert.equal(statusOf(route('GET', '/ws?machine_id=m-1&role=machine')), 401);
    assert.equal(statusOf(route('GET', '/ws?machine_id=a.b')), 400);
    assert.equal(statusOf(route('GET', '/ws?machine_id=m&role=admin')), 400);
    assert.equal(statusOf(route('GET', '/ws?machine_id=m', undefined, false)), 400);
    assert.deepEqual(route('GET', '/chat.css'), { kind: 'static', path: '/chat.css' });
    assert.equal(statusOf(route('DELETE', '/health')), 404);
  });

  test('register bodies and the socket url', () => {
    assert.deepEqual(parseRegisterBody('{"machine_id":"m_1"}'), { machineId: 'm_1' });
    for (const bad of ['', '{', '{"machine_id":5}', '{"machine_id":"a b"}', JSON.stringify({ machine_id: 'x'.repeat(5000) })]) {
      assert.ok('answer' in parseRegisterBody(bad), bad);
    }
    assert.equal(socketUrl('https://relay.example', 'm1'), 'wss://relay.example/ws?machine_id=m1');
    assert.equal(socketUrl('http://127.0.0.1:8787', 'm1'), 'ws://127.0.0.1:8787/ws?machine_id=m1');
  });
});
