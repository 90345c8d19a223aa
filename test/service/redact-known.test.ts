// The chat webview's last check (src/log/redact.ts: redactKnownSecrets, KnownSecretsRedactor): every known
// secret in every string and key of a posted message is replaced; what holds none is given back as it is
// (no copy: every streamed piece is posted through it); the matcher follows a change of the secrets.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KnownSecretsRedactor, REDACTED, redactKnownSecrets } from '../../src/log/redact';

const TOKEN = 'access-token-0123456789abcdef';
const KEY = 'sk-live-key-abcdefghijklmnop';

describe('the known secrets in a posted message', () => {
  test('replaced in strings, nested arrays and keys, each form (URL-encoded, JSON-escaped); the original untouched', () => {
    const quoted = 'p"ss-word-0123456789';
    const message = {
      kind: 'event',
      event: { event: 'chat.delta', delta: `token ${TOKEN} and ${encodeURIComponent(KEY + '/')}`, list: [1, ['deep', `x${KEY}x`], null], [TOKEN]: true },
      note: JSON.stringify({ q: quoted }),
    };
    const before = structuredClone(message);
    const out = redactKnownSecrets(message, [TOKEN, KEY, quoted]);
    assert.deepEqual(message, before, 'the message given is not changed');
    const text = JSON.stringify(out);
    for (const secret of [TOKEN, KEY, quoted, JSON.stringify(quoted).slice(1, -1)]) assert.ok(!text.includes(secret), `${secret} in ${text}`);
    assert.equal(out.event.delta, `token ${REDACTED} and ${REDACTED}%2F`);
    assert.deepEqual(out.event.list, [1, ['deep', `x${REDACTED}x`], null]);
    assert.equal((out.event as Record<string, unknown>)[REDACTED], true);
    assert.equal(out.kind, 'event');
  });

  test('a message with no secret in it is given back as it is: no copy of it or of any part', () => {
    const message = { kind: 'event', event: { event: 'conversation.updated', conversation: { title: 'plain', tags: ['a', 'b'] } } };
    assert.equal(redactKnownSecrets(message, [TOKEN]), message);
    const partly = { a: { b: 'clean' }, c: { d: TOKEN } };
    const out = redactKnownSecrets(partly, [TOKEN]);
    assert.notEqual(out, partly);
    assert.equal(out.a, partly.a, 'the clean part is shared');
    assert.deepEqual(out.c, { d: REDACTED });
  });

  test("an own `__proto__` key stays a key (its value scrubbed), never the copy's prototype", () => {
    const message = JSON.parse(`{"__proto__": {"x": "${TOKEN}"}, "y": 1}`) as Record<string, unknown>;
    const out = redactKnownSecrets(message, [TOKEN]);
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.deepEqual(Object.getOwnPropertyDescriptor(out, '__proto__')?.value, { x: REDACTED });
    assert.ok(!JSON.stringify(out).includes(TOKEN));
  });

  test('KnownSecretsRedactor follows a change of the secrets: a new one is replaced, one no longer known is not', () => {
    const redactor = new KnownSecretsRedactor();
    const line = (text: string) => ({ kind: 'event', text });
    assert.deepEqual(redactor.redact(line(`a ${TOKEN}`), [TOKEN]), line(`a ${REDACTED}`));
    assert.deepEqual(redactor.redact(line(`b ${TOKEN}`), [TOKEN]), line(`b ${REDACTED}`), 'the kept matcher still works (a global RegExp used again)');
    assert.deepEqual(redactor.redact(line(`c ${TOKEN} ${KEY}`), [TOKEN, KEY]), line(`c ${REDACTED} ${REDACTED}`));
    assert.deepEqual(redactor.redact(line(`d ${TOKEN} ${KEY}`), [KEY]), line(`d ${TOKEN} ${REDACTED}`));
    assert.deepEqual(redactor.redact(line(`e ${KEY}`), []), line(`e ${KEY}`));
    const secrets = [TOKEN];
    redactor.redact(line('f'), secrets);
    secrets[0] = KEY;
    assert.deepEqual(redactor.redact(line(`g ${KEY}`), secrets), line(`g ${REDACTED}`), 'the same array changed in place is a change too');
  });
});
