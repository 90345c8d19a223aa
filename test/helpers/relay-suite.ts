import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { mkdir, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { cutPost } from './cut-post';
import { RelayPeer, TestMachine, TestRelayClient, UpgradeRefused } from './relay-peers';
import { TEST_AUTH_TOKEN, register, type RelayTarget, type StartRelay, type TargetOptions } from './relay-targets';
import { tempDir, waitFor } from './temp';

const T = { timeout: 20_000 };
const MAX_FRAME = 2 * 1024 * 1024;

const newMachineId = () => `m-${randomUUID().slice(0, 8)}`;

async function refusal(connecting: Promise<unknown>): Promise<UpgradeRefused> {
  const error = await connecting.then(
    () => assert.fail('the upgrade was accepted'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof UpgradeRefused, String(error));
  return error;
}

/** A GET with the path sent exactly as written (fetch would normalize `..` away). */
function rawGet(origin: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${origin}${path}`, { method: 'GET', path }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A registered machine with its socket open. */
async function onlineMachine(target: RelayTarget, machineId = newMachineId()) {
  assert.equal((await register(target, machineId)).status, 200);
  return { machineId, machine: await TestMachine.connect(target.wsOrigin, machineId, TEST_AUTH_TOKEN) };
}

/** A client of `machineId`, its cid as the machine saw it `open`, and its first status. */
async function joinedClient(target: RelayTarget, machineId: string, machine: TestMachine) {
  const client = await TestRelayClient.connect(target.wsOrigin, machineId);
  const cid = await machine.nextOpen();
  assert.equal(await client.nextStatus(), 'online');
  return { client, cid };
}

/**
 * `count` clients of `machineId` from `address` that never start the end-to-end handshake, 50 at a
 * time: the sockets let in (left open) and the HTTP statuses of the refused ones.
 */
async function flood(target: RelayTarget, machineId: string, count: number, address: string) {
  const admitted: RelayPeer[] = [];
  const refused: number[] = [];
  for (let start = 0; start < count; start += 50) {
    const batch = Array.from({ length: Math.min(50, count - start) }, () => RelayPeer.connect(`${target.wsOrigin}/ws?machine_id=${machineId}`, {}, address));
    for (const outcome of await Promise.allSettled(batch)) {
      if (outcome.status === 'fulfilled') admitted.push(outcome.value);
      else if (outcome.reason instanceof UpgradeRefused) refused.push(outcome.reason.status);
      else throw outcome.reason;
    }
  }
  return { admitted, refused };
}

/** The client says hello and the machine answers (as a welcome would): returns the client's cid. */
async function chat(machine: TestMachine, client: TestRelayClient): Promise<string> {
  const hello = `hello ${randomUUID()}`;
  client.send(hello);
  const { c } = await machine.peer.nextJson<{ c: string }>((f) => f.t === 'data' && f.d === hello);
  machine.sendData(c, 'welcome');
  assert.equal(await client.next(), 'welcome');
  return c;
}

/** The relay's `relay.connects_refused` log lines about `address`. */
function refusalLines(output: string, address: string): { reason: string; refused: number }[] {
  return output
    .split('\n')
    .map((line) => /\{.*"event":"relay\.connects_refused".*\}/.exec(line)?.[0])
    .filter((json): json is string => json !== undefined)
    .map((json) => JSON.parse(json) as { address: string; reason: string; refused: number })
    .filter((line) => line.address === address);
}

/** A relay of its own for the tests of the enclosing describe. */
function relayFor(start: StartRelay, options?: TargetOptions): () => RelayTarget {
  let target: RelayTarget | undefined;
  before(async () => {
    target = await start(options);
  });
  after(() => target?.close());
  return () => target!;
}

/**
 * The relay contract (docs/relay.md), run against each deployment: the Worker in Miniflare and the
 * Node relay, with real `ws` sockets on 127.0.0.1 playing machines and clients.
 */
export function relaySuite(name: string, start: StartRelay): void {
  describe(`relay (${name})`, () => {
    let target: RelayTarget;
    const open: { close(): Promise<void> }[] = [];
    const track = <P extends { close(): Promise<void> }>(peer: P): P => (open.push(peer), peer);

    before(async () => {
      target = await start();
    });
    /** A machine with one client, both closed after the suite. */
    const pairUp = async () => {
      const { machineId, machine } = await onlineMachine(target);
      const { client, cid } = await joinedClient(target, machineId, machine);
      return { machineId, machine: track(machine), client: track(client), cid };
    };
    after(async () => {
      await Promise.all(open.map((peer) => peer.close()));
      await target?.close();
    });

    test('GET /health answers ok', T, async () => {
      const response = await fetch(`${target.origin}/health`);
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), { status: 'ok' });
    });

    test('POST /register with AUTH_TOKEN answers the socket url; a wrong or missing token gets 401 invalid_token', T, async () => {
      const machineId = newMachineId();
      const accepted = await register(target, machineId);
      assert.equal(accepted.status, 200);
      assert.equal(accepted.body.status, 'ok');
      assert.equal(accepted.body.data.machine_id, machineId);
      assert.equal(accepted.body.data.url, `${target.wsOrigin}/ws?machine_id=${machineId}`);
      for (const token of ['wrong-token-wrong-token-wrong-token-00', 'short', null]) {
        const refused = await register(target, newMachineId(), token);
        assert.equal(refused.status, 401);
        assert.deepEqual({ status: refused.body.status, code: refused.body.code }, { status: 'error', code: 'invalid_token' });
        assert.ok(!JSON.stringify(refused.body).includes(TEST_AUTH_TOKEN));
      }
    });

    test('an invalid machine_id is refused 400 invalid_request, at /register and at /ws', T, async () => {
      for (const bad of ['', 'a/b', 'x'.repeat(129), 'é']) {
        const registered = await register(target, bad);
        assert.equal(registered.status, 400);
        assert.equal(registered.body.code, 'invalid_request');
      }
      const refused = await refusal(RelayPeer.connect(`${target.wsOrigin}/ws?machine_id=${encodeURIComponent('../x')}`));
      assert.equal(refused.status, 400);
      assert.equal(JSON.parse(refused.body).code, 'invalid_request');
    });

    test('a machine socket with a wrong or missing AUTH_TOKEN is refused 401', T, async () => {
      const machineId = newMachineId();
      await register(target, machineId);
      const wrong = await refusal(TestMachine.connect(target.wsOrigin, machineId, 'wrong-token-wrong-token-wrong-token-00'));
      assert.equal(wrong.status, 401);
      assert.equal(JSON.parse(wrong.body).code, 'invalid_token');
      const missing = await refusal(RelayPeer.connect(`${target.wsOrigin}/ws?machine_id=${machineId}&role=machine`));
      assert.equal(missing.status, 401);
    });

    test('a client of a machine_id never registered is refused 404 not_found', T, async () => {
      const refused = await refusal(TestRelayClient.connect(target.wsOrigin, newMachineId()));
      assert.equal(refused.status, 404);
      assert.equal(JSON.parse(refused.body).code, 'not_found');
    });

    test('routing: client frames reach the machine with their cid; machine frames reach only that client', T, async () => {
      const { machineId, machine } = await onlineMachine(target);
      track(machine);
      const a = await joinedClient(target, machineId, machine);
      const b = await joinedClient(target, machineId, machine);
      track(a.client);
      track(b.client);
      assert.notEqual(a.cid, b.cid);

      a.client.send('{"type":"get_config","id":1}');
      assert.deepEqual(await machine.nextData(), { t: 'data', c: a.cid, d: '{"type":"get_config","id":1}' });
      b.client.send('from b');
      assert.deepEqual(await machine.nextData(), { t: 'data', c: b.cid, d: 'from b' });

      machine.sendData(a.cid, 'for a only');
      machine.sendData(b.cid, 'for b');
      assert.equal(await a.client.next(), 'for a only');
      assert.equal(await b.client.next(), 'for b');
      assert.ok(!b.client.peer.received.includes('for a only'));
    });

    test('a client that goes away is reported to the machine with close', T, async () => {
      const { machine, client, cid } = await pairUp();
      await client.close();
      assert.deepEqual(await machine.nextClose(cid), { t: 'close', c: cid });
    });

    test('the machine closes a client with its code and reason', T, async () => {
      const { machine, client, cid } = await pairUp();
      machine.sendClose(cid, 4401, 'unknown client key');
      assert.deepEqual(await client.peer.waitClose(), { code: 4401, reason: 'unknown client key' });
    });

    test("the machine's close reason over 123 UTF-8 bytes reaches the client cut by whole characters (a pair astride the limit)", T, async () => {
      const { machine, client, cid } = await pairUp();
      // 40 CJK characters are 120 bytes; the emoji's 4 would make 124: the reason keeps the 40 and nothing of the pair.
      machine.sendClose(cid, 4000, `${'中'.repeat(40)}\u{1F600}x`);
      assert.deepEqual(await client.peer.waitClose(), { code: 4000, reason: '中'.repeat(40) });
    });

    test("isolation: a client of machine A never sees B traffic, and a machine cannot address another machine's clients", T, async () => {
      const a = await onlineMachine(target);
      const b = await onlineMachine(target);
      track(a.machine);
      track(b.machine);
      const clientA = await joinedClient(target, a.machineId, a.machine);
      const clientB = await joinedClient(target, b.machineId, b.machine);
      track(clientA.client);
      track(clientB.client);

      // A's machine tries B's client, then marks the end of its frames on its own client.
      a.machine.sendData(clientB.cid, 'intrusion');
      a.machine.sendData(clientA.cid, 'marker a');
      assert.equal(await clientA.client.next(), 'marker a');
      b.machine.sendData(clientB.cid, 'marker b');
      assert.equal(await clientB.client.next(), 'marker b');
      assert.ok(!clientB.client.peer.received.includes('intrusion'));

      clientB.client.send('secret of b');
      assert.deepEqual(await b.machine.nextData(), { t: 'data', c: clientB.cid, d: 'secret of b' });
      clientA.client.send('hello a');
      assert.deepEqual(await a.machine.nextData(), { t: 'data', c: clientA.cid, d: 'hello a' });
      assert.ok(!a.machine.peer.received.some((t) => t.includes('secret of b')));
      assert.ok(!a.machine.peer.received.some((t) => t.includes(clientB.cid)));
    });

    test('machine offline: the client gets status offline and stays; back: online, and the machine gets open for it', T, async () => {
      const { machineId, machine } = await onlineMachine(target);
      const { client } = await joinedClient(target, machineId, machine);
      track(client);
      await machine.close();
      assert.equal(await client.nextStatus(), 'offline');

      client.send('while offline');
      const error = await client.nextError();
      assert.equal(error.code, 'not_found');
      assert.ok(client.peer.open);

      const back = track(await TestMachine.connect(target.wsOrigin, machineId, TEST_AUTH_TOKEN));
      const cid = await back.nextOpen();
      assert.equal(await client.nextStatus(), 'online');
      client.send('after return');
      assert.deepEqual(await back.nextData(cid), { t: 'data', c: cid, d: 'after return' });
      assert.ok(!back.peer.received.some((t) => t.includes('while offline')));
    });

    test('a client joining while the machine is offline gets status offline, then online when it connects', T, async () => {
      const machineId = newMachineId();
      assert.equal((await register(target, machineId)).status, 200);
      const client = track(await TestRelayClient.connect(target.wsOrigin, machineId));
      assert.equal(await client.nextStatus(), 'offline');
      const machine = track(await TestMachine.connect(target.wsOrigin, machineId, TEST_AUTH_TOKEN));
      const cid = await machine.nextOpen();
      assert.equal(await client.nextStatus(), 'online');
      machine.sendData(cid, 'welcome');
      assert.equal(await client.next(), 'welcome');
    });

    test('a new machine socket replaces the old one (closed 4409); clients are opened on the new one', T, async () => {
      const { machineId, machine: old } = await onlineMachine(target);
      const { client, cid } = await joinedClient(target, machineId, old);
      track(client);
      const replacement = track(await TestMachine.connect(target.wsOrigin, machineId, TEST_AUTH_TOKEN));
      assert.deepEqual(await old.peer.waitClose(), { code: 4409, reason: 'replaced' });
      assert.equal(await replacement.nextOpen(), cid);
      assert.equal(await client.nextStatus(), 'online');
      assert.ok(!client.peer.receivedJson().some((f) => f.machine === 'offline'));
      client.send('to the new machine');
      assert.deepEqual(await replacement.nextData(cid), { t: 'data', c: cid, d: 'to the new machine' });
    });

    test('frame limits: a frame of 2 MiB is relayed; larger gets payload_too_large and close 1009', T, async () => {
      const { machine, client, cid } = await pairUp();
      const largest = 'a'.repeat(MAX_FRAME);
      client.send(largest);
      const relayed = await machine.nextData(cid, 15_000);
      assert.equal(relayed.d.length, MAX_FRAME);

      client.send('b'.repeat(MAX_FRAME + 1));
      const error = await client.nextError();
      assert.equal(error.code, 'payload_too_large');
      assert.equal((await client.peer.waitClose()).code, 1009);
      await machine.nextClose(cid);
    });

    test('a binary client frame gets invalid_request and the socket stays open', T, async () => {
      const { machine, client, cid } = await pairUp();
      client.send(Buffer.from([1, 2, 3]));
      assert.equal((await client.nextError()).code, 'invalid_request');
      client.send('still here');
      assert.deepEqual(await machine.nextData(cid), { t: 'data', c: cid, d: 'still here' });
    });

    test('rate limit: a burst beyond 120 frames is cut with rate_limited; the client stays connected', T, async () => {
      const { machine, client, cid } = await pairUp();
      const sent = 400;
      for (let i = 0; i < sent; i += 1) client.send(`frame ${i}`);
      assert.equal((await client.nextError()).code, 'rate_limited');
      client.send('ping');
      await client.peer.next((t) => t === 'pong');
      // Frames are handled in order, so the pong comes after every frame above was relayed or dropped.
      machine.sendData(cid, 'end');
      assert.equal(await client.next(), 'end');
      const relayed = machine.peer.receivedJson().filter((f) => f.t === 'data' && f.c === cid).length;
      assert.ok(relayed >= 120 && relayed < sent, `relayed ${relayed} of ${sent}`);
      assert.ok(client.peer.open);
    });

    test('heartbeat: ping is answered pong, for clients and machines, and never reaches the machine', T, async () => {
      const { machine, client, cid } = await pairUp();
      client.send('ping');
      assert.equal(await client.peer.next((t) => t === 'pong'), 'pong');
      machine.peer.send('ping');
      assert.equal(await machine.peer.next((t) => t === 'pong'), 'pong');
      client.send('after ping');
      assert.deepEqual(await machine.nextData(cid), { t: 'data', c: cid, d: 'after ping' });
      assert.ok(!machine.peer.received.some((t) => t.includes('"d":"ping"')));
    });

    test('the relay logs events but never AUTH_TOKEN', T, async () => {
      await register(target, newMachineId(), 'wrong-token-wrong-token-wrong-token-00');
      await refusal(TestMachine.connect(target.wsOrigin, newMachineId(), 'wrong-token-wrong-token-wrong-token-00'));
      const { machine } = await onlineMachine(target);
      track(machine);
      machine.peer.send('not a frame');
      await waitFor(() => target.output().includes('relay.machine_frame_ignored'), 'the ignored machine frame logged');
      assert.ok(!target.output().includes(TEST_AUTH_TOKEN));
    });

    test("a /register body the network cut short is the client's: 400 if anyone reads, no internal error, nothing of the body in the log", T, async () => {
      const body = JSON.stringify({ machine_id: 'cut-BODYMARK-SPLIT-rest' });
      const port = Number(new URL(target.origin).port);
      for (let i = 0; i < 3; i++) {
        const status = await cutPost(port, '/register', body, body.indexOf('SPLIT'), { Authorization: `Bearer ${TEST_AUTH_TOKEN}` });
        assert.ok(status === -1 || status === 400, `a cut body answered ${status}`);
      }
      assert.equal((await register(target, newMachineId())).status, 200, 'the relay goes on');
      const cuts = () =>
        target
          .output()
          .split('\n')
          .filter((l) => l.includes('"event":"http.body_incomplete"') && l.includes('"path":"/register"')).length;
      await waitFor(() => cuts() >= 3, 'each cut logged');
      const lines = target.output().split('\n');
      assert.deepEqual(
        lines.filter((l) => l.includes('relay.request_failed') || l.includes('"level":"error"') || /^\s+at /.test(l) || l.includes('BODYMARK')),
        [],
        'no internal error, no stack, nothing of the body',
      );
      assert.equal(cuts(), 3, 'each cut logged once, at info');
      assert.ok(lines.every((l) => !l.includes('"event":"http.body_incomplete"') || l.includes('"level":"info"')));
    });

    test('malformed machine frames are ignored, and the relay goes on routing', T, async () => {
      const { machine, client, cid } = await pairUp();
      for (const bad of ['not json', '[]', 'null', '{"t":"nope","c":"x"}', '{"t":"data"}', `{"t":"data","c":"${cid}","d":5}`, '{"t":"close","c":"x","code":1000}']) {
        machine.peer.send(bad);
      }
      machine.peer.send(Buffer.from('binary'));
      machine.sendData('unknown-cid', 'dropped');
      machine.sendData(cid, 'still routed');
      assert.equal(await client.next(), 'still routed');
      assert.ok(machine.peer.open && client.peer.open);
      assert.deepEqual(
        client.peer.received.filter((t) => !t.startsWith('{"relay"')),
        ['still routed'],
      );
    });
  });

  describe(`relay (${name}) phone page`, () => {
    let target: RelayTarget;
    let dir: { dir: string; cleanup: () => Promise<void> };
    before(async () => {
      dir = await tempDir('ra-relay-static-');
      await mkdir(join(dir.dir, 'media'));
      await writeFile(join(dir.dir, 'media', 'phone.html'), '<!DOCTYPE html><title>phone page</title>');
      await writeFile(join(dir.dir, 'media', 'chat.css'), 'body{}');
      await writeFile(join(dir.dir, 'media', 'chat-phone.js'), `console.log(${JSON.stringify('phone '.repeat(2000))});`);
      await writeFile(join(dir.dir, 'media', 'chat-phone.js.map'), '{"version":3,"sources":["../src/secret-source.ts"]}');
      await writeFile(join(dir.dir, 'secret.json'), '{"secret":true}');
      target = await start({ staticDir: join(dir.dir, 'media') });
    });
    after(async () => {
      await target?.close();
      await dir?.cleanup();
    });

    test('/ is the phone page, its files are served, and nothing outside its folder is', T, async () => {
      const page = await fetch(`${target.origin}/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(await page.text(), '<!DOCTYPE html><title>phone page</title>');
      const css = await fetch(`${target.origin}/chat.css`);
      assert.equal(css.status, 200);
      assert.match(css.headers.get('content-type') ?? '', /^text\/css/);
      for (const path of ['/../secret.json', '/%2e%2e/secret.json', '/..%2fsecret.json', '/%2e%2e%2fsecret.json', '/media/../secret.json', '/nope.html']) {
        const response = await rawGet(target.origin, path);
        assert.notEqual(response.status, 200, path);
        assert.ok(!response.body.includes('"secret"'), path);
      }
    });

    test('the page cannot be framed by another site (CSP frame-ancestors, X-Frame-Options), and source maps are not served', T, async () => {
      for (const path of ['/', '/phone.html']) {
        const page = await fetch(`${target.origin}${path}`);
        assert.equal(page.status, 200, path);
        assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/, path);
        assert.equal(page.headers.get('x-frame-options'), 'DENY', path);
        await page.arrayBuffer();
      }
      const map = await rawGet(target.origin, '/chat-phone.js.map');
      assert.notEqual(map.status, 200);
      assert.ok(!map.body.includes('secret-source'));
    });

    test('the bundle is compressed when the client accepts it, and revalidated by its ETag (304)', T, async () => {
      const first = await fetch(`${target.origin}/chat-phone.js`, { headers: { 'accept-encoding': 'gzip' } });
      assert.equal(first.status, 200);
      assert.equal(first.headers.get('content-encoding'), 'gzip');
      assert.match(await first.text(), /^console\.log\("phone phone/);
      const etag = first.headers.get('etag');
      assert.ok(etag, 'an ETag');
      const again = await fetch(`${target.origin}/chat-phone.js`, { headers: { 'if-none-match': etag } });
      assert.equal(again.status, 304);
    });
  });

  describe(`relay (${name}) clients per machine`, () => {
    const relay = relayFor(start, { maxClientsPerMachine: 2 });

    test('beyond the limit a client is refused 429 rate_limited; when one leaves, a new one gets in', T, async () => {
      const { machineId, machine } = await onlineMachine(relay());
      const first = await joinedClient(relay(), machineId, machine);
      const second = await joinedClient(relay(), machineId, machine);
      const refused = await refusal(TestRelayClient.connect(relay().wsOrigin, machineId));
      assert.equal(refused.status, 429);
      assert.equal(JSON.parse(refused.body).code, 'rate_limited');
      // Another machine's clients do not count.
      const other = await onlineMachine(relay());
      const elsewhere = await joinedClient(relay(), other.machineId, other.machine);

      await first.client.close();
      await machine.nextClose(first.cid);
      const third = await joinedClient(relay(), machineId, machine);
      await Promise.all([second.client.close(), third.client.close(), elsewhere.client.close(), machine.close(), other.machine.close()]);
    });
  });

  describe(`relay (${name}) unauthenticated floods`, () => {
    const relay = relayFor(start, { refusalLogWindowMs: 1_000 });

    test("1,100 unauthenticated connects from one address are refused beyond a few, logged per window, and the owner's phone still connects and chats", { timeout: 120_000 }, async () => {
      const { machineId, machine } = await onlineMachine(relay());
      const attack = await flood(relay(), machineId, 1100, '127.0.0.2');
      try {
        const phone = await TestRelayClient.connect(relay().wsOrigin, machineId, '127.0.0.3');
        assert.equal(await phone.nextStatus(), 'online');
        assert.ok(attack.refused.length >= 1000, `${attack.refused.length} of 1100 refused`);
        assert.deepEqual([...new Set(attack.refused)], [429]);
        const cid = await chat(machine, phone);
        machine.sendData(cid, 'still here');
        assert.equal(await phone.next(), 'still here');
        await phone.close();

        // One line per address and window, whose counts add up to every refusal.
        const lines = await waitFor(
          () => {
            const found = refusalLines(relay().output(), '127.0.0.2');
            return found.reduce((sum, line) => sum + line.refused, 0) === attack.refused.length ? found : undefined;
          },
          'the refusals to be logged',
          15_000,
        );
        assert.ok(lines.length < 50, `${lines.length} log lines for ${attack.refused.length} refusals`);
        assert.ok(lines.every((line) => line.reason === 'rate_limited'));
      } finally {
        await Promise.all([...attack.admitted.map((peer) => peer.close()), machine.close()]);
      }
    });

    test('clients awaiting the machine from many addresses: the oldest waiting one makes room for a newcomer; a confirmed client is never dropped', { timeout: 60_000 }, async () => {
      const { machineId, machine } = await onlineMachine(relay());
      const phone = await TestRelayClient.connect(relay().wsOrigin, machineId, '127.0.0.3');
      assert.equal(await phone.nextStatus(), 'online');
      const cid = await chat(machine, phone);
      const waiting: RelayPeer[] = [];
      try {
        for (let host = 1; host <= 9; host += 1) {
          const wave = await flood(relay(), machineId, 8, `127.0.1.${host}`);
          assert.deepEqual(wave.refused, [], `127.0.1.${host}`);
          waiting.push(...wave.admitted);
        }
        const dropped = await waitFor(() => {
          const closed = waiting.filter((peer) => peer.closed);
          return closed.length >= 8 ? closed : undefined;
        }, 'the oldest waiting clients to be dropped');
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.equal(waiting.filter((peer) => peer.closed).length, 8, 'only as many as needed are dropped');
        for (const peer of dropped) assert.deepEqual(peer.closed, { code: 4429, reason: 'too many clients awaiting the machine' });
        assert.ok(
          dropped.every((peer) => waiting.indexOf(peer) < 8),
          'the oldest are dropped',
        );
        assert.ok(phone.peer.open, 'the confirmed phone stays');
        machine.sendData(cid, 'after the flood');
        assert.equal(await phone.next(), 'after the flood');
        const newcomer = await TestRelayClient.connect(relay().wsOrigin, machineId, '127.0.0.4');
        assert.equal(await newcomer.nextStatus(), 'online');
        await newcomer.close();
      } finally {
        await Promise.all([...waiting.map((peer) => peer.close()), phone.close(), machine.close()]);
      }
    });
  });

  describe(`relay (${name}) idle timeout`, () => {
    const relay = relayFor(start, { idleTimeoutMs: 1_000 });

    test('a silent socket is closed 4408; a socket sending ping every 200 ms stays', T, async () => {
      const { machineId, machine } = await onlineMachine(relay());
      const chatty = await joinedClient(relay(), machineId, machine);
      const silent = await joinedClient(relay(), machineId, machine);
      const beat = setInterval(() => {
        machine.peer.send('ping');
        chatty.client.send('ping');
      }, 200);
      try {
        assert.deepEqual(await silent.client.peer.waitClose(), { code: 4408, reason: 'idle timeout' });
        await machine.nextClose(silent.cid);
        assert.ok(chatty.client.peer.open && machine.peer.open);
      } finally {
        clearInterval(beat);
        await Promise.all([chatty.client.close(), machine.close()]);
      }
    });
  });

  describe(`relay (${name}) restart`, () => {
    const relay = relayFor(start);

    test('after a relay restart, the machine and its clients reconnect and talk again', T, async () => {
      const { machineId, machine } = await onlineMachine(relay());
      const { client } = await joinedClient(relay(), machineId, machine);
      await relay().restart();
      await Promise.all([machine.peer.waitClose(), client.peer.waitClose()]);

      if (relay().keepsRegistrations) {
        // The Durable Object remembers the registration: the client can wait for its machine.
        const early = await TestRelayClient.connect(relay().wsOrigin, machineId);
        assert.equal(await early.nextStatus(), 'offline');
        await early.close();
      } else {
        // Node keeps registrations in memory: 404 until the machine is back (clients retry).
        assert.equal((await refusal(TestRelayClient.connect(relay().wsOrigin, machineId))).status, 404);
      }
      const back = await TestMachine.connect(relay().wsOrigin, machineId, TEST_AUTH_TOKEN);
      const again = await TestRelayClient.connect(relay().wsOrigin, machineId);
      const cid = await back.nextOpen();
      assert.equal(await again.nextStatus(), 'online');
      again.send('hello again');
      assert.deepEqual(await back.nextData(cid), { t: 'data', c: cid, d: 'hello again' });
      await Promise.all([again.close(), back.close()]);
    });
  });
}
