import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bindHostFor, compileAllowFrom } from '../../src/transport/http/allow-from';
import { FixedWindowLimiter } from '../../src/transport/http/rate-limit';

test('allow_from patterns match addresses segment by segment', () => {
  const allowed = compileAllowFrom(['192.168.1.*', '10.0.0.5', '::1', 'fd00::*']);
  assert.equal(allowed('192.168.1.77'), true);
  assert.equal(allowed('::ffff:192.168.1.77'), true, 'IPv4-mapped IPv6');
  assert.equal(allowed('192.168.2.77'), false);
  assert.equal(allowed('10.0.0.5'), true);
  assert.equal(allowed('10.0.0.50'), false);
  assert.equal(allowed('::1'), true);
  assert.equal(allowed('0:0:0:0:0:0:0:1'), true, 'expanded IPv6 form');
  assert.equal(allowed('fd00::1234'), true);
  assert.equal(allowed('127.0.0.1'), false);
  assert.equal(allowed(undefined), false);
  assert.equal(compileAllowFrom(['*'])('8.8.8.8'), true);
  assert.equal(compileAllowFrom(['localhost'])('127.0.0.1'), true);
});

test('the server binds loopback only when every pattern is loopback', () => {
  assert.equal(bindHostFor(['127.0.0.1', '::1']), '127.0.0.1');
  assert.equal(bindHostFor(['localhost']), '127.0.0.1');
  assert.equal(bindHostFor(['127.0.0.1', '192.168.1.*']), '::');
  assert.equal(bindHostFor(['*']), '::');
});

test('the fixed-window limiter blocks past the limit until the window ends', () => {
  let now = 0;
  const limiter = new FixedWindowLimiter(3, 60_000, () => now);
  assert.equal(limiter.hit('a'), 0);
  assert.equal(limiter.hit('a'), 0);
  assert.equal(limiter.hit('a'), 0);
  assert.equal(limiter.retryAfterSeconds('a'), 60);
  assert.equal(limiter.hit('a'), 60);
  assert.equal(limiter.retryAfterSeconds('b'), 0, 'keys are separate');
  now = 30_000;
  assert.equal(limiter.retryAfterSeconds('a'), 30);
  now = 60_000;
  assert.equal(limiter.retryAfterSeconds('a'), 0, 'a new window starts');
});
