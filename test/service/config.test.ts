import assert from 'node:assert/strict';
import { chmod, mkdtemp, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { watch } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError, ConfigFile, secretValues } from '../../src/config/config-file';
import { CONFIG_LOCK_FILE_NAME } from '../../src/config/config-lock';
import { CONFIG_FILE_NAME } from '../../src/platform/paths';
import { tcpChannelOf, webhookAccountsOf, websocketChannelsOf, type ServiceConfig } from '../../src/protocol/config';
import { ServiceError } from '../../src/protocol/errors';

const TOKEN = 'tok_0123456789abcdefghijklmnopqrstuvwxyz';
const dirs: string[] = [];
const open: ConfigFile[] = [];

after(async () => {
  await Promise.all(open.map((file) => file.close()));
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-config-'));
  dirs.push(dir);
  return dir;
}

async function dirWith(content: unknown): Promise<string> {
  const dir = await tempDir();
  await writeFile(join(dir, CONFIG_FILE_NAME), typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return dir;
}

async function load(dir: string, debounceMs = 50): Promise<ConfigFile> {
  const file = await ConfigFile.load(dir, { debounceMs });
  open.push(file);
  return file;
}

const readText = (dir: string) => readFile(join(dir, CONFIG_FILE_NAME), 'utf8');
const readJson = async (dir: string) => JSON.parse(await readText(dir)) as Record<string, unknown>;

async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Lets a watcher see (and, if it is wrong, act on) what just happened. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 250));

function recordEvents(file: ConfigFile) {
  const changes: string[][] = [];
  const invalid: ConfigError[] = [];
  file.on('change', (fields) => changes.push(fields));
  file.on('invalid', (error) => invalid.push(error));
  return { changes, invalid };
}

const objectForm = {
  provider: 'anthropic',
  model: 'claude-sonnet-4-5',
  my_note: { keep: ['me', 1, true] },
  channels: {
    lan: { type: 'tcp', port: 5055, allow_from: ['192.168.1.*'] },
    phone: { type: 'websocket', url: 'wss://relay.example.com/ws', auth_token: 'relay-token-0123456789-0123456789-abc' },
    webhook: { accounts: { shop: { incoming_path: '/hooks/shop', outgoing_url: 'https://shop.example.com/in', secret: 'whsec_c2VjcmV0LXNlY3JldA==' } } },
  },
};

const arrayForm = {
  provider: 'anthropic',
  model: 'claude-sonnet-4-5',
  my_note: { keep: ['me', 1, true] },
  channels: [
    { name: 'lan', type: 'tcp', port: 5055, allow_from: ['192.168.1.*'] },
    { name: 'phone', type: 'websocket', url: 'wss://relay.example.com/ws', auth_token: 'relay-token-0123456789-0123456789-abc' },
    { name: 'webhook', type: 'webhook', accounts: { shop: { incoming_path: '/hooks/shop', outgoing_url: 'https://shop.example.com/in', secret: 'whsec_c2VjcmV0LXNlY3JldA==' } } },
  ],
};

describe('ConfigFile.load', () => {
  test('creates a default file with a generated token, mode 0600', async () => {
    const dir = join(await tempDir(), 'nested', 'data');
    const file = await load(dir);
    const written = await readJson(dir);
    assert.deepEqual(Object.keys(written).sort(), ['auth_token', 'model', 'permission_mode', 'provider', 'temperature']);
    assert.equal(written.provider, 'openai');
    assert.equal(typeof written.auth_token, 'string');
    const token = written.auth_token as string;
    assert.ok(token.length >= 32);
    assert.match(token, /^[A-Za-z0-9_-]+$/);
    assert.equal(file.current.auth_token, token);
    assert.equal(file.authToken, token);
    if (process.platform !== 'win32') assert.equal((await stat(join(dir, CONFIG_FILE_NAME))).mode & 0o777, 0o600);

    // A second load reads the same file, no new token.
    const again = await load(dir);
    assert.equal(again.current.auth_token, token);
  });

  test('a missing token is generated and written back, unknown fields and the object form of channels kept', async () => {
    const dir = await dirWith(objectForm);
    const file = await load(dir);
    const written = await readJson(dir);
    const { auth_token: token, ...rest } = written;
    assert.deepEqual(rest, objectForm);
    assert.equal(typeof token, 'string');
    assert.ok((token as string).length >= 32);
    assert.equal(file.current.auth_token, token);
    assert.ok(!Array.isArray(written.channels));
    if (process.platform !== 'win32') assert.equal((await stat(join(dir, CONFIG_FILE_NAME))).mode & 0o777, 0o600);
  });

  test("a write-back keeps the file's indentation", async () => {
    const dir = await dirWith(JSON.stringify({ model: 'm' }, null, '\t'));
    await load(dir);
    assert.match(await readText(dir), /\n\t"model": "m",\n\t"auth_token"/);
  });

  test('a valid file with a token is not rewritten', async () => {
    const text = `{"model":"x","auth_token":"${TOKEN}"}`;
    const dir = await dirWith(text);
    await load(dir);
    assert.equal(await readText(dir), text);
  });

  test("a valid file with a token is read without service.json's lock: a writer holding it does not hold up the start", async () => {
    const text = `{"model":"x","auth_token":"${TOKEN}"}`;
    const dir = await dirWith(text);
    // Held by a live process of this host (the test runner), as by `user add` in its read-modify-write.
    await writeFile(join(dir, CONFIG_LOCK_FILE_NAME), JSON.stringify({ pid: process.ppid, hostname: hostname(), started_at: new Date().toISOString() }));
    const file = await load(dir);
    assert.equal(file.current.model, 'x');
    assert.equal(file.authToken, TOKEN);
    assert.ok(await stat(join(dir, CONFIG_LOCK_FILE_NAME)), "the other writer's lock is left as it was");
  });

  test('both forms of channels load into the same model', async () => {
    const a = await load(await dirWith({ ...objectForm, auth_token: TOKEN }));
    const b = await load(await dirWith({ ...arrayForm, auth_token: TOKEN }));
    assert.deepEqual(a.current, b.current);
    assert.deepEqual(tcpChannelOf(a.current), { name: 'lan', type: 'tcp', port: 5055, allow_from: ['192.168.1.*'] });
    assert.equal(websocketChannelsOf(a.current)[0]?.url, 'wss://relay.example.com/ws');
    assert.equal(webhookAccountsOf(a.current).get('shop')?.incoming_path, '/hooks/shop');
    assert.equal((a.current as Record<string, unknown>).my_note !== undefined, true);
  });

  test('an invalid file names each bad field and is left untouched', async () => {
    const text = JSON.stringify(
      {
        provider: 'skynet',
        temperature: 7,
        auth_token: 'short-secret-value',
        channels: { phone: { type: 'websocket', url: 'http://not-ws.example.com', auth_token: 'relay-token-0123456789-0123456789-abc' } },
        users: [{ username: 'ann' }],
      },
      null,
      2,
    );
    const dir = await dirWith(text);
    const error = await ConfigFile.load(dir).then(
      () => assert.fail('expected a ConfigError'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof ConfigError);
    const problems = error.problems.join('\n');
    for (const field of ['provider:', 'temperature:', 'auth_token:', 'channels.phone.url:', 'users.0.password_hash:']) {
      assert.ok(problems.includes(field), `${field} not named in:\n${problems}`);
    }
    assert.equal(error.problems.length, 5);
    assert.ok(error.message.includes('temperature'));
    assert.ok(!error.message.includes('short-secret-value'), 'a secret leaked into the message');
    assert.equal(await readText(dir), text);
    assert.deepEqual(await readdir(dir), [CONFIG_FILE_NAME]);
  });

  test('permission_timeout_seconds: 1800 by default; an integer from 1 to 30 days, else the field is named', async () => {
    assert.equal((await load(await dirWith({ auth_token: TOKEN }))).current.permission_timeout_seconds, 1800);
    assert.equal((await load(await dirWith({ auth_token: TOKEN, permission_timeout_seconds: 60 }))).current.permission_timeout_seconds, 60);
    assert.equal((await load(await dirWith({ auth_token: TOKEN, permission_timeout_seconds: 2_592_000 }))).current.permission_timeout_seconds, 2_592_000);
    // Beyond 30 days (1e20: a request's expires_at would not even be a date).
    for (const bad of [0, 1.5, '60', 2_592_001, 1e20]) {
      const error = await ConfigFile.load(await dirWith({ auth_token: TOKEN, permission_timeout_seconds: bad })).then(
        () => assert.fail(`expected a ConfigError for ${JSON.stringify(bad)}`),
        (e: unknown) => e,
      );
      assert.ok(error instanceof ConfigError);
      assert.match(error.problems.join('\n'), /permission_timeout_seconds:/);
    }
  });

  test('history retention: off by default; max_days, max_bytes, tool_output_days positive integers, else the field is named', async () => {
    assert.deepEqual((await load(await dirWith({ auth_token: TOKEN }))).current.history, {});
    const history = { max_days: 365, max_bytes: 500_000_000, tool_output_days: 30 };
    assert.deepEqual((await load(await dirWith({ auth_token: TOKEN, history }))).current.history, history);
    for (const [field, bad] of [
      ['max_days', 0],
      ['max_days', 1.5],
      ['max_bytes', '1GB'],
      ['max_bytes', 1000],
      ['tool_output_days', -1],
      ['unknown_setting', 1],
    ] as const) {
      const error = await ConfigFile.load(await dirWith({ auth_token: TOKEN, history: { [field]: bad } })).then(
        () => assert.fail(`expected a ConfigError for history.${field} = ${JSON.stringify(bad)}`),
        (e: unknown) => e,
      );
      assert.ok(error instanceof ConfigError);
      assert.match(error.problems.join('\n'), /history/);
    }
  });

  test('invalid JSON says where, without quoting the file', async () => {
    const text = '{\n  "model": "x",\n  "api_key": "sk-live-secret-123456"\n  "temperature": 1\n}\n';
    const dir = await dirWith(text);
    const error = await ConfigFile.load(dir).then(
      () => assert.fail('expected a ConfigError'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof ConfigError);
    assert.match(error.message, /invalid JSON at line 4, column 3/);
    assert.ok(!error.message.includes('sk-live-secret'), error.message);
    assert.equal(await readText(dir), text);
  });

  test('an empty file or a non-object is refused', async () => {
    for (const text of ['', '[]', 'null', '{"a":1} x']) {
      const dir = await dirWith(text);
      await assert.rejects(ConfigFile.load(dir), ConfigError, `accepted ${JSON.stringify(text)}`);
      assert.equal(await readText(dir), text);
    }
  });
});

describe('ConfigFile.update', () => {
  test('all or nothing: one bad field writes nothing', async () => {
    const dir = await dirWith({ ...objectForm, auth_token: TOKEN });
    const file = await load(dir);
    const { changes } = recordEvents(file);
    const before = await readText(dir);
    await assert.rejects(file.update({ temperature: 1.5, model: '' }), (error: unknown) => {
      assert.ok(error instanceof ServiceError);
      assert.equal(error.code, 'invalid_request');
      assert.match(error.message, /model/);
      assert.doesNotMatch(error.message, /temperature/);
      return true;
    });
    await assert.rejects(file.update({ temperature: 3, base_url: 'ftp://x' }), (error: unknown) => {
      assert.ok(error instanceof ServiceError);
      assert.match(error.message, /temperature/);
      assert.match(error.message, /base_url/);
      return true;
    });
    assert.equal(await readText(dir), before);
    assert.equal(file.current.temperature, 0.7);
    assert.deepEqual(changes, []);
  });

  test('unknown fields are named and refused', async () => {
    const dir = await dirWith({ auth_token: TOKEN });
    const file = await load(dir);
    const before = await readText(dir);
    await assert.rejects(file.update({ temperature: 1, auth_token: 'x'.repeat(40), colour: 'red' }), (error: unknown) => {
      assert.ok(error instanceof ServiceError);
      assert.equal(error.code, 'invalid_request');
      assert.match(error.message, /auth_token: unknown field/);
      assert.match(error.message, /colour: unknown field/);
      return true;
    });
    await assert.rejects(file.update('temperature=1'), ServiceError);
    await assert.rejects(file.update(null), ServiceError);
    assert.equal(await readText(dir), before);
  });

  test('returns only the fields that changed; nothing changed writes nothing', async () => {
    const dir = await dirWith({ ...objectForm, auth_token: TOKEN });
    const file = await load(dir);
    const { changes } = recordEvents(file);

    assert.deepEqual(await file.update({ model: 'claude-opus-4', temperature: 0.7, provider: 'anthropic' }), ['model']);
    assert.deepEqual(changes, [['model']]);
    const written = await readJson(dir);
    assert.equal(written.model, 'claude-opus-4');
    assert.deepEqual(written.my_note, objectForm.my_note);
    assert.deepEqual(written.channels, objectForm.channels);
    assert.equal(written.auth_token, TOKEN);

    const text = await readText(dir);
    const mtime = (await stat(join(dir, CONFIG_FILE_NAME))).mtimeMs;
    assert.deepEqual(await file.update({ model: 'claude-opus-4' }), []);
    assert.deepEqual(await file.update({}), []);
    assert.equal(await readText(dir), text);
    assert.equal((await stat(join(dir, CONFIG_FILE_NAME))).mtimeMs, mtime);
    assert.equal(changes.length, 1);
  });

  test('null removes an optional setting', async () => {
    const dir = await dirWith({ auth_token: TOKEN });
    const file = await load(dir);
    assert.deepEqual((await file.update({ api_key: 'sk-test-key-abcdef', base_url: 'http://localhost:11434/v1', max_tokens: 512, system_prompt: 'Be brief.' })).sort(), [
      'api_key',
      'base_url',
      'max_tokens',
      'system_prompt',
    ]);
    assert.equal(file.current.api_key, 'sk-test-key-abcdef');
    assert.deepEqual((await file.update({ api_key: null, max_tokens: null })).sort(), ['api_key', 'max_tokens']);
    const written = await readJson(dir);
    assert.equal('api_key' in written, false);
    assert.equal('max_tokens' in written, false);
    assert.equal(written.base_url, 'http://localhost:11434/v1');
    assert.equal(file.current.api_key, undefined);
    assert.deepEqual(await file.update({ api_key: null }), []);
    await assert.rejects(file.update({ model: null }), ServiceError);
  });

  test('writes are atomic (no temp files left), 0600, and concurrent updates are serialized', async () => {
    const dir = await dirWith({ ...objectForm, auth_token: TOKEN });
    const file = await load(dir);
    const temperatures = Array.from({ length: 20 }, (_, i) => Math.round((i / 10) * 10) / 10);
    const results = await Promise.all(temperatures.map((temperature, i) => file.update({ temperature, system_prompt: `prompt ${i}` })));
    assert.ok(results.every((fields) => fields.includes('system_prompt')));
    assert.deepEqual(await readdir(dir), [CONFIG_FILE_NAME]);
    const written = await readJson(dir);
    assert.equal(written.system_prompt, 'prompt 19');
    assert.equal(written.temperature, temperatures[19]);
    assert.equal(file.current.system_prompt, 'prompt 19');
    assert.deepEqual(written.my_note, objectForm.my_note);
    if (process.platform !== 'win32') assert.equal((await stat(join(dir, CONFIG_FILE_NAME))).mode & 0o777, 0o600);
  });

  test('current is frozen', async () => {
    const file = await load(await dirWith({ auth_token: TOKEN }));
    assert.throws(() => {
      (file.current as { model: string }).model = 'x';
    }, TypeError);
    assert.throws(() => (file.current.channels as unknown[]).push({}), TypeError);
  });

  test('a hand edit not yet picked up is kept by the next update', async () => {
    const dir = await dirWith({ auth_token: TOKEN, model: 'a' });
    const file = await load(dir);
    await writeFile(join(dir, CONFIG_FILE_NAME), JSON.stringify({ auth_token: TOKEN, model: 'b', extra: 1 }));
    assert.deepEqual(await file.update({ temperature: 1 }), ['temperature']);
    const written = await readJson(dir);
    assert.equal(written.model, 'b');
    assert.equal(written.extra, 1);
    assert.equal(file.current.model, 'b');
  });

  test('a file made invalid by hand is not overwritten by an update', async () => {
    const dir = await dirWith({ auth_token: TOKEN });
    const file = await load(dir);
    const broken = '{"auth_token": "' + TOKEN + '", "temperature": ';
    await writeFile(join(dir, CONFIG_FILE_NAME), broken);
    await assert.rejects(file.update({ temperature: 1 }), (error: unknown) => {
      assert.ok(error instanceof ServiceError);
      assert.ok(!error.message.includes(TOKEN));
      return true;
    });
    assert.equal(await readText(dir), broken);
  });
});

describe('ConfigFile.edit', () => {
  test('changes the raw JSON, keeps the rest, reports the changed fields', async () => {
    const dir = await dirWith({ ...objectForm, auth_token: TOKEN });
    const file = await load(dir);
    const { changes } = recordEvents(file);
    const fields = await file.edit((raw) => {
      raw.users = [{ username: 'ann', password_hash: 'scrypt$N=16384,r=8,p=1$c2FsdA$aGFzaA' }];
      (raw.channels as Record<string, { port?: number }>).lan!.port = 6000;
    });
    assert.deepEqual(fields.sort(), ['channels', 'users']);
    assert.deepEqual(changes, [fields]);
    const written = await readJson(dir);
    assert.equal((written.channels as Record<string, { port: number }>).lan.port, 6000);
    assert.ok(!Array.isArray(written.channels));
    assert.deepEqual(written.my_note, objectForm.my_note);
    assert.equal(tcpChannelOf(file.current).port, 6000);
    assert.equal(file.current.users[0]?.username, 'ann');
  });

  test('an edit that makes the config invalid writes nothing', async () => {
    const dir = await dirWith({ auth_token: TOKEN });
    const file = await load(dir);
    const before = await readText(dir);
    await assert.rejects(
      file.edit((raw) => {
        raw.channels = [{ name: 'a', type: 'tcp', port: 70000 }];
      }),
      (error: unknown) => error instanceof ConfigError && /channels\.0\.port/.test(error.message),
    );
    assert.equal(await readText(dir), before);
    assert.deepEqual(file.current.channels, []);
  });
});

describe('ConfigFile.watch', () => {
  test('a change made between load and watch (another process, under the lock) is picked up once watching begins', async () => {
    // Review of s12/editor12: load no longer waits for a writer holding service.json.lock, and watch()
    // began no check of its own, so a write landing before it stayed unseen until the next change.
    const dir = await dirWith({ auth_token: TOKEN, model: 'a' });
    const file = await load(dir, 0);
    const { changes } = recordEvents(file);
    const other = await load(dir, 0);
    await other.edit((raw) => void (raw.model = 'b'));
    await other.close();
    try {
      file.watch();
      await waitFor(() => file.current.model === 'b', 'the change picked up');
      assert.ok(changes.length > 0);
    } finally {
      await file.close();
    }
  });

  test("an event that changed nothing (the store's open making service.json private) takes no lock; a hand edit still does", async () => {
    const dir = await dirWith({ auth_token: TOKEN, model: 'good' });
    await chmod(join(dir, CONFIG_FILE_NAME), 0o644);
    const file = await load(dir, 0);
    const { changes } = recordEvents(file);
    const seen: string[] = [];
    const watcher = watch(dir, (_event, name) => name && seen.push(name));
    try {
      file.watch();
      await chmod(join(dir, CONFIG_FILE_NAME), 0o600);
      await waitFor(() => seen.includes(CONFIG_FILE_NAME), 'the chmod event');
      // The reload it scheduled (no debounce here) has run or not by now; the edit's event comes after it.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await writeFile(join(dir, 'edit.swp'), JSON.stringify({ auth_token: TOKEN, model: 'edited' }));
      await rename(join(dir, 'edit.swp'), join(dir, CONFIG_FILE_NAME));
      await waitFor(() => changes.length > 0, 'the hand edit applied');
      await file.close();
      await writeFile(join(dir, 'marker'), '');
      await waitFor(() => seen.includes('marker'), 'every earlier event delivered');
      // Before, the chmod's event reloaded under the lock too (2).
      // Each time the lock is taken, its own temporary file (a new name) comes and goes: the edit's only.
      const locks = new Set(seen.filter((n) => /^service\.json\.lock\..*\.tmp$/.test(n)));
      assert.equal(locks.size, 1, seen.join(' '));
    } finally {
      watcher.close();
    }
  });

  test('a valid hand edit is applied and reported with the changed fields', async () => {
    const dir = await dirWith({ ...objectForm, auth_token: TOKEN });
    const file = await load(dir);
    const { changes, invalid } = recordEvents(file);
    file.watch();
    // Saved the way editors do: a new file renamed over the old one.
    const temp = join(dir, 'service.json.swp');
    await writeFile(temp, JSON.stringify({ ...objectForm, auth_token: TOKEN, model: 'edited', temperature: 0.2 }, null, 2));
    await rename(temp, join(dir, CONFIG_FILE_NAME));
    await waitFor(() => changes.length > 0, 'a change event');
    assert.deepEqual(changes[0]!.sort(), ['model', 'temperature']);
    assert.equal(file.current.model, 'edited');
    assert.deepEqual(invalid, []);

    // An in-place write is picked up too.
    await writeFile(join(dir, CONFIG_FILE_NAME), JSON.stringify({ ...objectForm, auth_token: TOKEN, model: 'edited', temperature: 0.2, max_steps: 5 }));
    await waitFor(() => changes.length > 1, 'a second change event');
    assert.deepEqual(changes[1], ['max_steps']);
  });

  test('an invalid hand edit is reported, the last good config kept, the file not overwritten', async () => {
    const dir = await dirWith({ auth_token: TOKEN, model: 'good' });
    const file = await load(dir);
    const events = recordEvents(file);
    let recovered = 0;
    file.on('recovered', () => recovered++);
    file.watch();
    const broken = JSON.stringify({ auth_token: TOKEN, model: 'bad', temperature: 9, provider: 'nope' });
    await writeFile(join(dir, CONFIG_FILE_NAME), broken);
    await waitFor(() => events.invalid.length > 0, 'an invalid event');
    const error = events.invalid[0]!;
    assert.ok(error instanceof ConfigError);
    assert.ok(error.problems.some((p) => p.startsWith('temperature:')));
    assert.ok(error.problems.some((p) => p.startsWith('provider:')));
    assert.equal(file.current.model, 'good');
    assert.deepEqual(events.changes, []);
    await settle();
    assert.equal(await readText(dir), broken);
    assert.equal(events.invalid.length, 1);

    // Fixed again: applied.
    await writeFile(join(dir, CONFIG_FILE_NAME), JSON.stringify({ auth_token: TOKEN, model: 'fixed' }));
    await waitFor(() => events.changes.length > 0, 'a change after the fix');
    assert.deepEqual(events.changes[0], ['model']);
    assert.equal(file.current.model, 'fixed');
    assert.equal(recovered, 1);
  });

  test('our own writes are not reported twice', async () => {
    const dir = await dirWith({ auth_token: TOKEN });
    const file = await load(dir);
    const { changes, invalid } = recordEvents(file);
    file.watch();
    await file.update({ model: 'one' });
    await file.edit((raw) => {
      raw.max_steps = 3;
    });
    await settle();
    assert.deepEqual(changes, [['model'], ['max_steps']]);
    assert.deepEqual(invalid, []);
  });

  test('a deleted file keeps the last good config', async () => {
    const dir = await dirWith({ auth_token: TOKEN, model: 'kept' });
    const file = await load(dir);
    const { changes, invalid } = recordEvents(file);
    file.watch();
    await unlink(join(dir, CONFIG_FILE_NAME));
    await settle();
    assert.equal(file.current.model, 'kept');
    assert.deepEqual(changes, []);
    assert.deepEqual(invalid, []);
    // The next write recreates it from the last good config.
    assert.deepEqual(await file.update({ temperature: 1 }), ['temperature']);
    assert.equal((await readJson(dir)).model, 'kept');
  });

  test('a hand edit removing auth_token gets a new one written back', async () => {
    const dir = await dirWith({ auth_token: TOKEN, model: 'm' });
    const file = await load(dir);
    const { changes } = recordEvents(file);
    file.watch();
    await writeFile(join(dir, CONFIG_FILE_NAME), JSON.stringify({ model: 'm', note: 'rotate' }));
    await waitFor(() => changes.length > 0, 'a change event');
    assert.deepEqual(changes[0]!.sort(), ['auth_token', 'note']);
    const written = await readJson(dir);
    assert.equal(written.note, 'rotate');
    assert.equal(written.auth_token, file.authToken);
    assert.notEqual(file.authToken, TOKEN);
    assert.ok(file.authToken.length >= 32);
  });

  test('close stops watching', async () => {
    const dir = await dirWith({ auth_token: TOKEN });
    const file = await load(dir);
    const { changes } = recordEvents(file);
    file.watch();
    await file.close();
    await writeFile(join(dir, CONFIG_FILE_NAME), JSON.stringify({ auth_token: TOKEN, model: 'after-close' }));
    await settle();
    assert.deepEqual(changes, []);
  });
});

test('secretValues lists every secret of a config', async () => {
  const file = await load(
    await dirWith({
      ...objectForm,
      api_key: 'sk-api-key-123456',
      auth_token: TOKEN,
      mcp_servers: { gh: { command: 'gh-mcp', env: { GITHUB_TOKEN: 'ghp_abcdefghijkl', LOG_LEVEL: 'debug-verbose' } } },
    }),
  );
  const secrets = secretValues(file.current as ServiceConfig);
  for (const secret of ['sk-api-key-123456', TOKEN, 'relay-token-0123456789-0123456789-abc', 'whsec_c2VjcmV0LXNlY3JldA==', 'ghp_abcdefghijkl']) {
    assert.ok(secrets.includes(secret), `${secret} missing`);
  }
  assert.ok(!secrets.includes('debug-verbose'));
});
