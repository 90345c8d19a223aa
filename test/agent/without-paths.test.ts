// What a webhook's sender or a phone push reads of a failure names no folder of the machine
// (providers/redact.ts withoutPaths). Found in review: a user name with a letter outside ASCII left the
// rest of the path, and Windows paths with forward slashes or a share's were not replaced at all.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withoutPaths } from '../../src/agent/providers/redact';

test('absolute paths are replaced whole, whatever letters they hold and however Windows writes them', () => {
  assert.equal(withoutPaths('fatal: not a git repository: /home/jürgen/proj/.git/worktrees/x'), 'fatal: not a git repository: [path]');
  assert.equal(withoutPaths('fatal: not a git repository: C:/Users/me/proj/.git/worktrees/x'), 'fatal: not a git repository: [path]');
  assert.equal(withoutPaths('could not read \\\\server\\share\\dir\\file'), 'could not read [path]');
  assert.equal(withoutPaths('in /srv/дом/репо/a.txt:12'), 'in [path]');
});

test('what is not a path on this machine is kept: URLs, relative paths', () => {
  assert.equal(withoutPaths('see https://example.com/a/b/c'), 'see https://example.com/a/b/c');
  assert.equal(withoutPaths('src/a/b.ts changed'), 'src/a/b.ts changed');
});
