// The turn's note is kept while what it says stays (agent/prompt/environment.ts momentNote): each of its
// parts changed (the minute, the roots' number, git's branch or count, a repository gone, the sender, remote or not)
// gives the note made afresh from the same parts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { localTime, momentNote, noteText } from '../../src/agent/prompt/environment';
import type { GitSummary } from '../../src/agent/prompt/git-status';

test('the kept note is the one made afresh, whatever changed', async () => {
  const start = Date.parse('2026-11-27T10:00:30Z');
  const said = async (facts: { minute?: number; roots?: string[]; git?: (GitSummary | undefined)[]; client?: string; remote?: boolean }) => {
    const now = new Date(start + (facts.minute ?? 0) * 60_000);
    const roots = facts.roots ?? ['/w/one'];
    const git = facts.git ?? roots.map(() => ({ branch: 'main', changed: 0 }));
    const client = facts.client ?? 'editor';
    const remote = facts.remote ?? false;
    const note = await momentNote({ now, roots, client, remote, git: async (root) => git[roots.indexOf(root)] });
    assert.equal(note, noteText({ time: localTime(now), roots, git, client, remote }));
    return note;
  };
  const first = await said({});
  assert.equal(await said({}), first);
  assert.notEqual(await said({ minute: 1 }), first);
  assert.match(await said({ roots: ['/w/two'] }), /branch main/);
  assert.match(await said({ roots: ['/w/one', '/w/two'] }), /Git in workspace folder 2/);
  assert.match(await said({ git: [{ branch: 'feature', changed: 0 }] }), /branch feature/);
  assert.match(await said({ git: [{ branch: 'other', changed: 0 }] }), /branch other/);
  assert.match(await said({ git: [{ branch: 'other', changed: 3 }] }), /3 changed files/);
  assert.match(await said({ git: [undefined] }), /not a git repository/);
  assert.match(await said({ git: [undefined], client: 'phone' }), /came from: phone$/);
  assert.match(await said({ git: [undefined], client: 'phone', remote: true }), /keep the answer short/);
});
