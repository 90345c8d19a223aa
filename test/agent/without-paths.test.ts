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

// Found in review: continuing a path over a space ate the prose after it whenever a later word held a
// slash (`and/or`, `w/`, `1/2`, a relative path), and a spaced folder name at the text's end left its
// last word.
test('prose after a path is kept even when a later word holds a slash; only a folder name with spaces continues a path', () => {
  assert.equal(withoutPaths('moved /home/ada/a.ts to the new src/b.ts'), 'moved [path] to the new src/b.ts');
  assert.equal(withoutPaths('read /home/ada/notes.txt then wrote 5 and/or 6'), 'read [path] then wrote 5 and/or 6');
  assert.equal(withoutPaths('open /home/ada/a.ts or use w/ care'), 'open [path] or use w/ care');
  assert.equal(withoutPaths('C:\\Users\\ada\\My Projects\\x.ts is not 1/2 done'), '[path] is not 1/2 done');
  assert.equal(withoutPaths('C:/Users/ada/notes.txt then wrote 5 and/or 6'), '[path] then wrote 5 and/or 6');
  assert.equal(withoutPaths('\\\\server\\share\\a.txt or use w\\ care'), '[path] or use w\\ care');
  assert.equal(withoutPaths('the folder /srv/app/build or use w/ care'), 'the folder [path] or use w/ care');
});

test('a folder name with spaces ending the text (its words capitalised) is replaced whole', () => {
  assert.equal(withoutPaths('/home/ada/My Projects'), '[path]');
  assert.equal(withoutPaths('cannot open /home/ada/My Projects, try again'), 'cannot open [path], try again');
  assert.equal(withoutPaths('in C:\\Users\\ada\\My Projects'), 'in [path]');
  assert.equal(withoutPaths('in \\\\server\\share\\Team Files.'), 'in [path].');
  // Lower-case words are prose, whatever ends the text.
  assert.equal(withoutPaths('the folder /srv/app/build was removed'), 'the folder [path] was removed');
});

test('a long text of prose and paths is replaced path by path', () => {
  const chunk = 'moved /home/ada/a.ts to the new src/b.ts and /home/ada/My Projects/x.ts or w/ care ';
  const text = chunk.repeat(1_500); // 21,000 words
  const want = 'moved [path] to the new src/b.ts and [path] or w/ care '.repeat(1_500);
  const got = withoutPaths(text);
  const firstDifference = [...want].findIndex((char, at) => got[at] !== char);
  assert.equal(got.length === want.length && firstDifference === -1, true, `differs at ${firstDifference}: ${got.slice(firstDifference, firstDifference + 80)}`);
});
