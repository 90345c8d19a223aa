// What a late permission answer is told (`conflict`): who decided, in the words the pages name senders
// with ("this computer" for the computer's access token, never the credential's kind; walk24 saw
// "already denied from access token" on the phone).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conflictMessage } from '../../src/agent/permission-texts';
import type { PermissionRequestRow } from '../../src/store';

function answeredBy(decidedBy: string | undefined, decision: 'allow' | 'deny' = 'deny'): PermissionRequestRow {
  const request = {
    request_id: 'r',
    conversation_id: 'c',
    conversation_title: '',
    source: 'ws',
    tool: 'run_command',
    arguments: {},
    created_at: '2026-11-28T00:00:00.000Z',
    expires_at: '2026-11-28T00:30:00.000Z',
  };
  return { request, callId: null, ownerOnly: false, status: 'resolved', resolution: { decision, decidedBy, reason: 'answered', resolvedMs: 0 } };
}

test('a decision by the computer’s access token is said as "this computer"; others by their names', () => {
  assert.equal(conflictMessage(answeredBy('access token')), 'already denied from this computer');
  assert.equal(conflictMessage(answeredBy('editor', 'allow')), 'already allowed from the editor');
  assert.equal(conflictMessage(answeredBy('Pixel 8')), 'already denied from Pixel 8');
  assert.equal(conflictMessage(answeredBy(undefined)), 'already denied from someone else');
});
