// Attack: the patterns review24d's survey left (s24), each fed a text shaped to make it backtrack: a
// repository's prompt file and .gitignore, an Ollama server's answer, git's stderr (a remote's own lines),
// a command's output shown on the phone, and URLs from the configuration. On the old patterns each input
// here blocks the thread for minutes (quadratic), which node:test's timeout cannot interrupt: the runner's
// per-file timeout fails the file. Linear, each takes milliseconds. Ordinary inputs give what they gave.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePrompt } from '../../src/agent/prompt/saved-prompts';
import { ServerWindows } from '../../src/agent/providers/server-window';
import { describeEndpoint } from '../../src/agent/providers/redact';
import { compareUrlOf } from '../../src/git/compare-url';
import { redactUrls } from '../../src/git/push';
import { gitignoreGlob } from '../../src/extension/gitignore-glob';
import { withoutStatusLine } from '../../src/web/chat/tool-card';

const N = 400_000;

test("attack: a prompt file's front matter line of blanks ending in a lone CR is read at once", { timeout: 30_000 }, () => {
  const text = `---\nA:${'\t'.repeat(N)}-\rX\n---\nthe body`;
  const prompt = parsePrompt(text, 'long.md', 'project');
  assert.ok(prompt, 'still a prompt');
  const ordinary = parsePrompt('---\ndescription:  "Review the diff"  \nmodel : gpt-x\n---\nReview it.', 'review.md', 'project');
  assert.equal(ordinary?.description, 'Review the diff');
});

test("attack: a .gitignore line with a long run of slashes inside is read at once (the extension's exclude globs)", { timeout: 30_000 }, () => {
  assert.equal(gitignoreGlob(`a${'/'.repeat(N)}x`), `a${'/'.repeat(N)}x`);
  assert.equal(gitignoreGlob('build/'), '**/build');
  assert.equal(gitignoreGlob('/dist///'), 'dist');
  assert.equal(gitignoreGlob('src/gen/'), 'src/gen');
  assert.equal(gitignoreGlob('# comment'), undefined);
  assert.equal(gitignoreGlob('!keep'), undefined);
  assert.equal(gitignoreGlob('///'), undefined);
});

test("attack: an Ollama server's parameters of a long run of newlines are read at once", { timeout: 30_000 }, async () => {
  const answer = (parameters: string) => async (url: string | URL | Request) =>
    String(url).endsWith('/api/show') ? new Response(JSON.stringify({ parameters }), { status: 200, headers: { 'content-type': 'application/json' } }) : new Response('no', { status: 404 });
  assert.equal(await new ServerWindows('http://127.0.0.1:11434/v1', answer(`0${'\n'.repeat(N)}u\nnum_ctx\t0`) as typeof fetch).of('m'), undefined);
  assert.equal(await new ServerWindows('http://127.0.0.1:11434/v1', answer('stop "<|end|>"\nnum_ctx                        8192\ntemperature 0.2') as typeof fetch).of('m'), 8192);
  assert.equal(await new ServerWindows('http://127.0.0.1:11434/v1', answer('num_ctx 4096') as typeof fetch).of('m'), 4096);
});

test("attack: git's stderr with a long word is redacted at once; a URL's credentials still are", { timeout: 30_000 }, () => {
  assert.equal(redactUrls(`${'+'.repeat(N)}\u0000@`).length, N + 2);
  assert.equal(redactUrls(`${'a'.repeat(N)}\u0000@`).length, N + 2);
  assert.equal(redactUrls('fatal: unable to access https://user:tok3n@github.com/o/r.git/: 403'), 'fatal: unable to access https://github.com/o/r.git/: 403');
  assert.equal(redactUrls('remote: see git+ssh://me@host/x'), 'remote: see git+ssh://host/x');
});

test("attack: a command's output full of '[timed out after ' is shown at once; the status line still goes", { timeout: 30_000 }, () => {
  const output = `${'[timed out after '.repeat(N / 16)}f`;
  assert.equal(withoutStatusLine(output), output);
  assert.equal(withoutStatusLine('ok\n[exit code 1]'), 'ok');
  assert.equal(withoutStatusLine('partial\n[timed out after 30 s]'), 'partial');
  assert.equal(withoutStatusLine('x\n[killed by signal SIGKILL]'), 'x');
});

test('URLs from the configuration with a long run of slashes are read at once', { timeout: 30_000 }, () => {
  assert.equal(describeEndpoint(`http://h/a${'/'.repeat(N)}x`).length, `http://h/a${'/'.repeat(N)}x`.length);
  assert.equal(describeEndpoint('https://api.example.com/v1///'), 'https://api.example.com/v1');
  assert.equal(compareUrlOf(`https://github.com/o${'/'.repeat(N)}r`, 'b', null), null);
  assert.equal(compareUrlOf('https://github.com/o/r.git', 'feature', 'main'), 'https://github.com/o/r/compare/main...feature?expand=1');
});
