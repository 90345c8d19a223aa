import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, describe, test } from 'node:test';
import { FileLogger } from '../../src/log/file-logger';
import { Redactor, REDACTED, redactText } from '../../src/log/redact';

const dirs: string[] = [];
after(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-log-'));
  dirs.push(dir);
  return dir;
}

async function readLines(file: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(file, 'utf8');
  assert.ok(text.endsWith('\n'));
  return text
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

const API_KEY = 'sk-live-0123456789abcdef';
const AUTH_TOKEN = 'tok_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345';
const SESSION = 'sess_9f8e7d6c5b4a3210';

describe('FileLogger', () => {
  test('writes JSON lines with time, level, event and fields', async () => {
    const dir = await tempDir();
    const logger = FileLogger.inDataDir(dir, { level: 'debug' });
    logger.info('service.started', { port: 5000, host: '127.0.0.1' });
    logger.debug('detail', { nested: { a: [1, 2] }, when: new Date(0), big: 10n });
    logger.warn('odd', { time: 'field named time', level: 3 });
    await logger.close();
    const file = join(dir, 'service.log');
    const lines = await readLines(file);
    assert.equal(lines.length, 3);
    assert.match(lines[0]!.time as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.deepEqual({ ...lines[0], time: 'T' }, { time: 'T', level: 'info', event: 'service.started', port: 5000, host: '127.0.0.1' });
    assert.deepEqual(lines[1]!.nested, { a: [1, 2] });
    assert.equal(lines[1]!.when, '1970-01-01T00:00:00.000Z');
    assert.equal(lines[1]!.big, '10');
    // Fields cannot overwrite the line's own keys.
    assert.equal(lines[2]!.level, 'warn');
    assert.equal(lines[2]!._time, 'field named time');
    assert.equal(lines[2]!._level, 3);
    if (process.platform !== 'win32') assert.equal((await stat(file)).mode & 0o777, 0o600);
  });

  test('a prepared line (Logger.prepare) is written when called: redacted as made, stamped then, its late numbers last, else byte for byte a logged line', async () => {
    const dir = await tempDir();
    const mirror = new PassThrough();
    let mirrored = '';
    mirror.on('data', (chunk: Buffer) => (mirrored += chunk.toString()));
    const logger = FileLogger.inDataDir(dir, { level: 'info', mirror, redactor: new Redactor([API_KEY]) });
    const child = logger.child({ conversation: 'c1', level: 'x' });
    const early = Date.now();
    const prepared = child.prepare?.('info', 'chat.answered', { chars: 12, note: `key ${API_KEY}`, token: 'secret-valued' });
    assert.ok(prepared);
    assert.equal(await readFile(join(dir, 'service.log'), 'utf8').catch(() => ''), '', 'nothing is written before the call');
    await new Promise((resolve) => setTimeout(resolve, 5));
    prepared({ ms: 7, time: 1, chars: 99 }); // `chars` is the line's already: dropped, not written twice
    // Without late numbers it is the line log() writes (only the time may differ).
    child.prepare?.('info', 'plain', { n: 1 })?.();
    child.info('plain', { n: 1 });
    assert.equal(child.prepare?.('debug', 'off', {}), undefined, 'a level that is off prepares nothing');
    await logger.close();
    const text = await readFile(join(dir, 'service.log'), 'utf8');
    assert.ok(!text.includes(API_KEY) && !text.includes('secret-valued'), text);
    const [answered, prepared2, logged] = text.trimEnd().split('\n');
    const line = JSON.parse(answered!) as Record<string, unknown>;
    assert.deepEqual(Object.keys(line), ['time', 'level', 'event', 'conversation', '_level', 'chars', 'note', 'token', 'ms', '_time']);
    assert.deepEqual(
      { ...line, time: 'T' },
      { time: 'T', level: 'info', event: 'chat.answered', conversation: 'c1', _level: 'x', chars: 12, note: `key ${REDACTED}`, token: REDACTED, ms: 7, _time: 1 },
    );
    assert.ok(Date.parse(line.time as string) >= early + 5, 'stamped when written');
    const untimed = (l: string) => l.replace(/"time":"[^"]*"/, '"time":"T"');
    assert.equal(untimed(prepared2!), untimed(logged!));
    assert.match(mirrored, /chat\.answered .*ms=7/);
  });

  test('a held line (PreparedLine hold) is stamped when called and written by the next line, a flush, a close or its timer, in order; never by a prepare', async () => {
    const dir = await tempDir();
    const file = join(dir, 'service.log');
    // A long hold: here only the next line, a flush or a close write a held line (the timer: below).
    const logger = FileLogger.inDataDir(dir, { level: 'info', holdMs: 60_000 });
    const child = logger.child({ conversation: 'c1' });
    logger.info('opened');
    await logger.flush(); // the file is open: a line is written at once from now on
    const events = async () => (await readLines(file)).map((l) => l.event);

    // The next line writes it first.
    const early = Date.now();
    child.prepare?.('info', 'answered.1', { chars: 1 })?.({ ms: 1 }, true);
    assert.deepEqual(await events(), ['opened'], 'held, not written');
    await new Promise((resolve) => setTimeout(resolve, 5));
    logger.info('next');
    const lines = await readLines(file);
    assert.deepEqual(
      lines.map((l) => l.event),
      ['opened', 'answered.1', 'next'],
    );
    assert.equal(lines[1]!.ms, 1);
    assert.ok(Date.parse(lines[1]!.time as string) < early + 5, 'stamped when held, not when written');

    // A prepare writes none (its caller waits for an fdatasync then: a write to the log would join that
    // sync's commit); the lines held meanwhile are written with the next line, in order.
    child.prepare?.('info', 'answered.2', {})?.({ ms: 2 }, true);
    const third = child.prepare?.('info', 'answered.3', {});
    assert.deepEqual((await events()).slice(3), [], 'a prepare writes no held line');
    third?.({ ms: 3 }, true);
    assert.deepEqual((await events()).slice(3), [], 'both held');
    logger.info('next.2');
    assert.deepEqual((await events()).slice(3), ['answered.2', 'answered.3', 'next.2']);

    // A flush writes it.
    child.prepare?.('info', 'answered.4', {})?.(undefined, true);
    await logger.flush();
    assert.deepEqual((await events()).slice(6), ['answered.4']);

    // And a close.
    child.prepare?.('info', 'answered.5', {})?.(undefined, true);
    await logger.close();
    assert.deepEqual((await events()).slice(6), ['answered.4', 'answered.5']);

    // Nothing after them: the timer (HELD_LINE_MS by default) writes the lines held, together, in order.
    const quickDir = await tempDir();
    const quick = FileLogger.inDataDir(quickDir, { level: 'info' });
    quick.info('opened');
    await quick.flush();
    quick.prepare?.('info', 'held.1', {})?.(undefined, true);
    quick.prepare?.('info', 'held.2', {})?.(undefined, true);
    const quickEvents = async () => (await readLines(join(quickDir, 'service.log'))).map((l) => l.event);
    for (let i = 0; i < 500 && !(await quickEvents()).includes('held.2'); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.deepEqual(await quickEvents(), ['opened', 'held.1', 'held.2']);
    await quick.close();
  });

  test('drops lines below the minimum level; setLevel changes it for children too', async () => {
    const dir = await tempDir();
    const logger = FileLogger.inDataDir(dir, { level: 'warn' });
    const child = logger.child({ conn: 'c1' });
    logger.debug('no');
    logger.info('no');
    child.info('no');
    logger.warn('yes-1');
    child.error('yes-2');
    logger.setLevel('debug');
    child.debug('yes-3');
    await logger.close();
    assert.deepEqual(
      (await readLines(join(dir, 'service.log'))).map((line) => line.event),
      ['yes-1', 'yes-2', 'yes-3'],
    );
  });

  test('child loggers share the file and add their fields', async () => {
    const dir = await tempDir();
    const logger = FileLogger.inDataDir(dir, { fields: { pid: 42 } });
    const conn = logger.child({ connection_id: 'c1' });
    const conv = conn.child({ conversation_id: 'v1' });
    logger.info('root');
    conn.info('conn', { extra: true });
    conv.info('conv', { connection_id: 'overridden' });
    await logger.close();
    const lines = await readLines(join(dir, 'service.log'));
    assert.deepEqual(
      lines.map(({ time: _t, ...rest }) => rest),
      [
        { level: 'info', event: 'root', pid: 42 },
        { level: 'info', event: 'conn', pid: 42, connection_id: 'c1', extra: true },
        { level: 'info', event: 'conv', pid: 42, connection_id: 'overridden', conversation_id: 'v1' },
      ],
    );
  });

  test('secrets never reach the file, by value or by key, in errors and nested objects', async () => {
    const dir = await tempDir();
    const redactor = new Redactor([API_KEY, AUTH_TOKEN, 'short']);
    const logger = FileLogger.inDataDir(dir, { redactor });
    redactor.addSecret(SESSION);

    const providerError = new Error(`401 Incorrect API key provided: ${API_KEY}`);
    (providerError as Error & { cause?: unknown }).cause = new Error(`upstream said ${AUTH_TOKEN}`);
    const cyclic: Record<string, unknown> = { name: 'loop', note: `token is ${SESSION}` };
    cyclic.self = cyclic;

    logger.error('provider.failed', { error: providerError });
    logger.info('request', {
      headers: { Authorization: 'Bearer whatever-it-is-here', cookie: 'sid=abc', 'x-api-key': 'anything-at-all' },
      body: { api_key: 'a-key-not-in-the-set', password: 'hunter2hunter2', list: [`${AUTH_TOKEN}`, { deep: { deeper: `x${API_KEY}x` } }] },
      url: `https://relay.example.com/ws?token=${'q'.repeat(20)}&room=1`,
      auth_token: 12345,
      max_tokens: 1024,
      api_key_set: true,
      cyclic,
    });
    logger.warn(`event mentioning ${SESSION}`, { text: `encoded ${encodeURIComponent(API_KEY + '/=')} and json ${JSON.stringify({ k: AUTH_TOKEN })}` });
    logger.child({ token: SESSION }).info('child.line', { message: `tokens: ${SESSION}` });
    await logger.close();

    const text = await readFile(join(dir, 'service.log'), 'utf8');
    for (const secret of [API_KEY, AUTH_TOKEN, SESSION, 'whatever-it-is-here', 'sid=abc', 'anything-at-all', 'a-key-not-in-the-set', 'hunter2', 'qqqqqqqqqqqq']) {
      assert.ok(!text.includes(secret), `${secret} leaked into the log:\n${text}`);
    }
    const lines = text
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, any>);
    assert.equal(lines.length, 4);
    const [errorLine, requestLine, warnLine, childLine] = lines;
    assert.equal(errorLine.error.name, 'Error');
    assert.equal(errorLine.error.message, `401 Incorrect API key provided: ${REDACTED}`);
    assert.match(errorLine.error.stack, /^Error: 401 Incorrect API key provided: \[redacted\]\n\s+at /);
    assert.equal(errorLine.error.cause.message, `upstream said ${REDACTED}`);
    assert.equal(requestLine.headers.Authorization, REDACTED);
    assert.equal(requestLine.body.api_key, REDACTED);
    assert.equal(requestLine.body.list[0], REDACTED);
    assert.equal(requestLine.body.list[1].deep.deeper, `x${REDACTED}x`);
    assert.equal(requestLine.url, `https://relay.example.com/ws?token=${REDACTED}&room=1`);
    assert.equal(requestLine.auth_token, REDACTED);
    assert.equal(requestLine.max_tokens, 1024, 'counts under a "token" name are kept');
    assert.equal(requestLine.api_key_set, true);
    assert.equal(requestLine.cyclic.self, '[circular]');
    assert.equal(requestLine.cyclic.note, `token is ${REDACTED}`);
    assert.equal(warnLine.event, `event mentioning ${REDACTED}`);
    assert.equal(childLine.token, REDACTED);
    // Values under 8 characters are not treated as secrets.
    assert.ok(!redactor.secrets().includes('short'));
  });

  test('setSecrets replaces the configured secrets, keeping run-time ones', async () => {
    const redactor = new Redactor(['old-secret-value']);
    redactor.addSecret(SESSION);
    redactor.setSecrets(['new-secret-value']);
    assert.equal(redactor.redactText('old-secret-value new-secret-value ' + SESSION), `old-secret-value ${REDACTED} ${REDACTED}`);
    redactor.removeSecret(SESSION);
    assert.equal(redactor.redactText(SESSION), SESSION);
  });

  test('rotates at the size limit and keeps at most N files', async () => {
    const dir = await tempDir();
    const file = join(dir, 'service.log');
    const logger = new FileLogger({ file, maxBytes: 2000, maxFiles: 3 });
    const total = 200;
    for (let i = 0; i < total; i++) logger.info('tick', { i, pad: 'x'.repeat(40) });
    await logger.flush();
    const names = (await readdir(dir)).sort();
    assert.deepEqual(names, ['service.log', 'service.log.1', 'service.log.2', 'service.log.3']);
    for (const name of names) assert.ok((await stat(join(dir, name))).size <= 2000, `${name} is over the limit`);
    // The kept files hold the newest lines, consecutive, oldest in .3.
    const kept: number[] = [];
    for (const name of ['service.log.3', 'service.log.2', 'service.log.1', 'service.log']) {
      for (const line of await readLines(join(dir, name))) kept.push(line.i as number);
    }
    assert.equal(kept.at(-1), total - 1);
    kept.forEach((value, index) => assert.equal(value, kept[0]! + index));
    await logger.close();
  });

  test('appends to an existing file and counts its size for rotation', async () => {
    const dir = await tempDir();
    const file = join(dir, 'service.log');
    await writeFile(file, `${JSON.stringify({ event: 'old', pad: 'y'.repeat(900) })}\n`);
    const logger = new FileLogger({ file, maxBytes: 1000, maxFiles: 1 });
    logger.info('new', { pad: 'z'.repeat(200) });
    await logger.close();
    assert.equal((await readLines(`${file}.1`))[0]!.event, 'old');
    assert.deepEqual(
      (await readLines(file)).map((line) => line.event),
      ['new'],
    );
  });

  test('close flushes everything logged before it; later lines are dropped', async () => {
    const dir = await tempDir();
    const file = join(dir, 'service.log');
    const logger = new FileLogger({ file });
    for (let i = 0; i < 5000; i++) logger.info('burst', { i });
    await logger.close();
    logger.info('after.close');
    const lines = await readLines(file);
    assert.equal(lines.length, 5000);
    assert.equal(lines[4999]!.i, 4999);
  });

  test('mirrors a short redacted form to a stream', async () => {
    const dir = await tempDir();
    const mirror = new PassThrough();
    let printed = '';
    mirror.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    const logger = new FileLogger({ file: join(dir, 'service.log'), mirror, mirrorLevel: 'warn', redactor: new Redactor([API_KEY]) });
    logger.info('quiet.on.mirror');
    logger.warn('provider.failed', { error: new Error(`bad key ${API_KEY}`), status: 401, url: 'http://x' });
    await logger.close();
    assert.match(printed, /^\d\d:\d\d:\d\d WARN  provider\.failed error="Error: bad key \[redacted\]" status=401 url=http:\/\/x\n$/);
    assert.equal((await readLines(join(dir, 'service.log'))).length, 2);
  });

  test('a write failure does not throw', async () => {
    const dir = await tempDir();
    // The log path is a directory: every write fails.
    const logger = new FileLogger({ file: dir });
    const original = process.stderr.write;
    let complaints = 0;
    process.stderr.write = ((chunk: unknown) => {
      if (String(chunk).includes('cannot write the log file')) complaints++;
      return true;
    }) as typeof process.stderr.write;
    try {
      logger.info('one');
      logger.info('two');
      await logger.close();
    } finally {
      process.stderr.write = original;
    }
    assert.equal(complaints, 1);
  });
});

test('redactText scrubs known secrets and credential-shaped text', () => {
  const secrets = [API_KEY, 'tiny'];
  assert.equal(redactText(`key ${API_KEY} tiny`, secrets), `key ${REDACTED} tiny`);
  assert.equal(redactText('Authorization: Bearer abc.def-ghi_123', []), `Authorization: Bearer ${REDACTED}`);
  assert.equal(redactText('see https://bob:pa55word@example.com/x', []), `see https://${REDACTED}@example.com/x`);
  assert.equal(redactText('{"api_key": "zzz", "model": "m"}', []), `{"api_key": "${REDACTED}", "model": "m"}`);
  assert.equal(redactText('?design=blue', []), '?design=blue');
  // A secret containing another is removed whole.
  assert.equal(redactText('abcdefgh-ijklmnop', ['abcdefgh', 'abcdefgh-ijklmnop']), REDACTED);
});
