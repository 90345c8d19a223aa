/**
 * The lazy schemas when something fails (review22c): a warm-up whose practice turn fails still builds the
 * schemas left, and a command schema whose build throws (a bug of ours, met at its type's first frame)
 * is answered `server_error` while the session lives on. Its own process: what is built here is this
 * file's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command, CommandResults, CommandSchemas } from '../../src/protocol';
import { lazySchema, schemaBuilt } from '../../src/protocol/lazy-schema';
import { commandOf } from '../../src/commands/dispatcher';
import { startService } from '../helpers/service';
import { TestClient } from '../helpers/ws-client';

test("a warm-up whose practice fails still builds the schemas no client used (the first commands don't pay for them)", async () => {
  const svc = await startService({}, { holdPractice: () => Promise.reject(new Error('the practice provider is down')) });
  try {
    await svc.service.warmedUp;
    assert.equal(schemaBuilt(Command), true);
    assert.equal(schemaBuilt(CommandResults), true);
  } finally {
    await svc.dispose();
  }
});

test('a command schema whose build throws is answered server_error, and the session goes on', async () => {
  const schemas = CommandSchemas as Record<string, unknown>;
  const kept = schemas.list_tools;
  schemas.list_tools = lazySchema(() => {
    throw new Error('a schema bug');
  });
  const svc = await startService({});
  try {
    const client = await TestClient.authed(svc.wsUrl, svc.token);
    try {
      const answer = await client.request({ type: 'list_tools', id: 'lt' }, 10_000);
      assert.deepEqual(answer, { status: 'error', error: 'internal error', code: 'server_error', id: 'lt' });
      const config = await client.request({ type: 'get_config' });
      assert.equal(config.status, 'ok');
    } finally {
      client.close();
    }
  } finally {
    schemas.list_tools = kept;
    await svc.dispose();
  }
});

test('a frame whose type names an Object.prototype member is an unknown command (CommandSchemas is a plain object, read by own key only)', () => {
  for (const type of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'isPrototypeOf']) {
    assert.deepEqual(commandOf(JSON.parse(`{"type":"${type}","id":7}`)), { status: 'error', error: `unknown command type: ${type}`, code: 'invalid_request', id: 7 });
  }
});
