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

test('attack: an unquoted absolute path with spaces in it is replaced whole: no folder after the space reaches a sender', () => {
  assert.equal(withoutPaths('cannot open /home/ada/My Projects/secret/x.ts'), 'cannot open [path]');
  assert.equal(withoutPaths('cannot open /home/ada/My Big Old Projects/secret/x.ts:3 now'), 'cannot open [path] now');
  assert.equal(withoutPaths('in /Volumes/Work Disk/client/app'), 'in [path]');
  assert.equal(withoutPaths('cannot open C:\\Users\\ada\\My Projects\\secret\\x.ts'), 'cannot open [path]');
  assert.equal(withoutPaths('cannot open C:/Users/ada/My Projects/secret/x.ts'), 'cannot open [path]');
  assert.equal(withoutPaths('could not read \\\\server\\share\\Team Files\\secret.txt'), 'could not read [path]');
});

test('ordinary prose after a path is kept', () => {
  assert.equal(withoutPaths('/home/ada/proj/x.ts is not in the workspace'), '[path] is not in the workspace');
  assert.equal(withoutPaths('the folder /srv/app/build was removed, try again'), 'the folder [path] was removed, try again');
  assert.equal(withoutPaths('C:\\Users\\ada\\x.ts is locked by another program'), '[path] is locked by another program');
  assert.equal(withoutPaths('wrote /tmp/a/b.txt and read 3 files'), 'wrote [path] and read 3 files');
  assert.equal(withoutPaths('cannot open /home/ada/My Projects/x.ts, try again'), 'cannot open [path], try again');
});
