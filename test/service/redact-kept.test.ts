// Redactor.redactText keeps its answers for short texts (s24, agent24): a kept answer never outlives the
// secrets it was made with. Each case compares with a fresh Redactor holding the same secrets.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Redactor, REDACTED } from '../../src/log/redact';

const TOKEN = 'session-token-0123456789';
const KEY = 'sk-config-key-abcdef';
const texts = [`id ${TOKEN}`, `key=${KEY}`, 'chat.answered', '8b0f3a52-5d4e-4a8f-9a4c-1f2e3d4c5b6a', `Bearer abcdefghij`];

/** What a Redactor made afresh with `secrets` answers for every text. */
function fresh(secrets: string[]): string[] {
  const r = new Redactor(secrets);
  return texts.map((t) => r.redactText(t));
}

test('a kept redaction follows the secrets: added, removed, replaced, and the same text asked many times', () => {
  const r = new Redactor([]);
  const asked = () => texts.map((t) => r.redactText(t));
  assert.deepEqual(asked(), fresh([]));
  assert.equal(r.redactText(`id ${TOKEN}`), `id ${TOKEN}`, 'not a secret yet');
  r.addSecret(TOKEN);
  assert.deepEqual(asked(), fresh([TOKEN]));
  assert.equal(r.redactText(`id ${TOKEN}`), `id ${REDACTED}`, 'a session token added: the kept answer is not used');
  r.setSecrets([KEY]);
  assert.deepEqual(asked(), fresh([KEY, TOKEN]), 'a config change');
  assert.equal(r.redactText(`key=${KEY}`), `key=${REDACTED}`);
  r.removeSecret(TOKEN);
  assert.deepEqual(asked(), fresh([KEY]), 'a token expired');
  r.setSecrets([]);
  assert.deepEqual(asked(), fresh([]), 'no secrets left');
  for (let i = 0; i < 3; i += 1) assert.deepEqual(asked(), fresh([]), 'asked again');
});

test("past the kept texts' bound, and for long texts, the answers are what a fresh Redactor gives", () => {
  const r = new Redactor([TOKEN]);
  const many = Array.from({ length: 1_000 }, (_, i) => (i % 3 === 0 ? `t${i} ${TOKEN}` : `text ${i}`));
  const long = `${'x'.repeat(100)} ${TOKEN}`;
  const expected = fresh([TOKEN]);
  for (let round = 0; round < 3; round += 1) {
    for (const text of many) assert.equal(r.redactText(text), text.includes(TOKEN) ? text.replace(TOKEN, REDACTED) : text);
    assert.equal(r.redactText(long), `${'x'.repeat(100)} ${REDACTED}`);
    assert.deepEqual(
      texts.map((t) => r.redactText(t)),
      expected,
    );
  }
  r.removeSecret(TOKEN);
  assert.equal(r.redactText(`t0 ${TOKEN}`), `t0 ${REDACTED}`, 'a configured secret is not removed by removeSecret');
  r.setSecrets([]);
  assert.equal(r.redactText(`t0 ${TOKEN}`), `t0 ${TOKEN}`);
});
