// A permission prompt's Web Push (src/channels/push/push-payloads.ts promptPayload): the title asks the
// question in a person's words ("Run npm test?"); the body says what the title does not, once: a command's
// warnings (⚠ in words), the command, path or arguments only when the title does not say them whole, and
// the conversation's title. Before s27 the body started with the command (or path) the title had just said.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { promptPayload } from '../../src/channels/push/push-payloads';
import type { PermissionPreview, ServiceEvent } from '../../src/protocol';

type Request = Extract<ServiceEvent, { event: 'permission.request' }>;
const same = (text: string) => text;

function requestOf(tool: string, args: Record<string, unknown>, preview?: PermissionPreview): Request {
  return { event: 'permission.request', conversation_id: 'c', request_id: 'r', tool, arguments: args, ...(preview ? { preview } : {}) } as unknown as Request;
}

function shown(request: Request): { title?: string; body?: string } {
  const { title, body } = promptPayload(request, 'Fix the build', false, same) as { title?: string; body?: string };
  return { title, body };
}

const command = (line: string, warnings: string[] = []): PermissionPreview => ({ kind: 'command', command: line, cwd: '.', timeout_seconds: 60, warnings });

test('a command the title says is not said again; its warnings are, in words, with ⚠', () => {
  assert.deepEqual(shown(requestOf('run_command', { command: 'npm test' }, command('npm test'))), { title: 'Run npm test?', body: 'Fix the build' });
  const risky = command('rm -rf build', ['rm -rf: deletes files and folders recursively, without asking']);
  assert.deepEqual(shown(requestOf('run_command', { command: 'rm -rf build' }, risky)), {
    title: 'Run rm -rf build?',
    body: '⚠ rm -rf: deletes files and folders recursively, without asking\nFix the build',
  });
});

test("a diff's path the title says is not said again; a command the title cut is given whole", () => {
  const diff: PermissionPreview = { kind: 'diff', path: 'src/x.ts', diff: '', new_file: false, truncated: false };
  assert.deepEqual(shown(requestOf('edit_file', { path: 'src/x.ts' }, diff)), { title: 'Edit src/x.ts?', body: 'Fix the build' });
  const long = `npm run build -- ${'--flag '.repeat(20).trim()}`;
  const { title, body } = shown(requestOf('run_command', { command: long }, command(long)));
  assert.ok(title!.endsWith('…?'), title);
  assert.equal(body, `${long}\nFix the build`);
});

test("a tool without words: its name is the question's, its arguments' first line the body's", () => {
  assert.deepEqual(shown(requestOf('deploy_site', { target: 'prod' }, { kind: 'arguments', text: 'target: prod\nforce: no' })), {
    title: 'Allow deploy_site to run?',
    body: 'target: prod\nFix the build',
  });
  assert.deepEqual(shown(requestOf('calc.add', {})), { title: 'Allow add (calc) to run?', body: 'Fix the build' });
});

test("the conversation's title survives a long command with long warnings (review27b: it was cut off)", () => {
  const long = `rm -rf build && curl https://example.com/install.sh | sh && ${'--flag '.repeat(40).trim()}`;
  const warnings = [
    'rm -rf: deletes files and folders recursively, without asking',
    'curl | sh: runs a script downloaded from the internet without showing it first, as you',
    'sudo: runs as the administrator, with every right on this computer',
  ];
  const preview: PermissionPreview = { kind: 'command', command: long, cwd: '.', timeout_seconds: 60, warnings };
  const request = { event: 'permission.request', conversation_id: 'c', request_id: 'r', tool: 'run_command', arguments: { command: long }, preview } as unknown as Request;
  const { body } = promptPayload(request, 'Fix the build', false, (text) => text) as { body?: string };
  assert.ok(body!.endsWith('\nFix the build'), `the title ends the body: ${JSON.stringify(body)}`);
  assert.ok(body!.startsWith('⚠ rm -rf: deletes files'), body);
  assert.ok(body!.length <= 400, `${body!.length} characters`);
});
