// A tool card's words (src/protocol/tool-words.ts): every tool the service offers itself is worded, in
// each phase; an MCP tool reads "<tool> (server)"; a tool the page does not know keeps its name.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createBuiltinToolSource } from '../../src/agent/tools/builtin';
import { createMemoryToolSource, type MemoryStore } from '../../src/agent/tools/memory';
import { createTodoToolSource, type PlanStore } from '../../src/agent/tools/todo';
import { askWords, partsText, toolLabel, toolWords, unrecordedWords, wordsText, type ToolPhase } from '../../src/protocol/tool-words';

const say = (tool: string, args: unknown, phase: ToolPhase = 'done', newFile?: boolean) => wordsText(toolWords(tool, args, phase, { newFile }));

test('every tool the service offers itself has words, in each phase, and never its machine name', async () => {
  const sources = [createBuiltinToolSource({ workspaceRoots: () => ['/tmp'] }), createMemoryToolSource({} as MemoryStore), createTodoToolSource({} as PlanStore)];
  const names = (await Promise.all(sources.map((source) => source.tools()))).flat().map((tool) => tool.name);
  assert.ok(names.includes('run_command') && names.includes('search_files') && names.includes('recall'), names.join(', '));
  for (const name of names) {
    for (const phase of ['asked', 'doing', 'done'] as const) {
      const words = toolWords(name, {}, phase);
      assert.equal(words.verb.code, undefined, `${name} (${phase}) has a verb, not its name`);
      assert.ok(!wordsText(words).includes('_'), `${name} (${phase}): "${wordsText(words)}"`);
    }
  }
});

test('the words per tool, as a person says them', () => {
  assert.equal(say('read_file', { path: 'src/app.ts' }), 'Read src/app.ts');
  assert.equal(say('read_file', { path: 'src/app.ts', offset: 10, limit: 20 }), 'Read src/app.ts, lines 10–29');
  assert.equal(say('read_file', { path: 'src/app.ts', offset: 40 }), 'Read src/app.ts, from line 40');
  assert.equal(say('run_command', { command: 'npm test' }), 'Ran npm test');
  assert.equal(say('run_command', { command: 'npm test' }, 'doing'), 'Running npm test');
  assert.equal(say('run_command', { command: 'npm test' }, 'asked'), 'Run npm test');
  assert.equal(say('run_command', { command: 'make\nmake install' }), 'Ran make …', 'a multi-line command: its first line');
  assert.equal(say('run_command', { command: ['git', 'commit', '-m', "it's done"] }), "Ran git commit -m 'it'\\''s done'", 'argv as a shell would need it');
  assert.equal(say('run_command', { command: 'ls', cwd: 'src' }), 'Ran ls in src');
  assert.equal(say('search_files', { pattern: 'foo', glob: '*.ts' }), 'Searched for “foo” in *.ts');
  assert.equal(say('search_files', { pattern: 'foo', path: 'src' }), 'Searched for “foo” in src');
  assert.equal(say('search_files', { pattern: 'foo', glob: '*.ts', path: 'src', ignore_case: true }), 'Searched for “foo” in *.ts under src, any case');
  assert.equal(say('edit_file', { path: 'src/x.ts', old_string: 'a', new_string: 'b' }), 'Edited src/x.ts');
  assert.equal(say('edit_file', { path: 'src/x.ts', replace_all: true }, 'asked'), 'Edit src/x.ts, every match');
  assert.equal(say('write_file', { path: 'notes.md', content: 'x' }), 'Wrote notes.md');
  assert.equal(say('write_file', { path: 'notes.md', content: 'x' }, 'done', true), 'Created notes.md');
  assert.equal(say('list_directory', {}), 'Listed the workspace folder');
  assert.equal(say('list_directory', { path: 'src' }), 'Listed src');
  assert.equal(say('remember', { content: 'prefers tabs' }), 'Remembered “prefers tabs”');
  assert.equal(say('recall', { query: 'tabs' }), 'Searched memory for “tabs”');
  assert.equal(say('recall', { query: '' }), 'Listed memories');
  assert.equal(say('forget', { id: 'm1' }), 'Forgot memory m1');
  assert.equal(say('todo', { items: [] }), 'Updated the plan');
});

test('the subject is what the call acted on, marked as code; a long one is cut', () => {
  const words = toolWords('search_files', { pattern: 'foo', glob: '*.ts' }, 'done');
  assert.deepEqual(
    words.subject.filter((part) => part.code).map((part) => part.text),
    ['foo', '*.ts'],
  );
  const long = say('read_file', { path: `src/${'a'.repeat(200)}.ts` });
  assert.ok(long.length < 100 && long.endsWith('…'), long);
});

test('an MCP tool reads "<tool> (server)"; an unknown tool keeps its name and its first subject', () => {
  assert.equal(toolLabel('calc.add'), 'add (calc)');
  assert.equal(toolLabel('vscode.runTests'), 'runTests (VS Code)');
  assert.equal(toolLabel('github.search.issues'), 'search.issues (github)');
  assert.equal(say('calc.add', { a: 2, b: 40 }), 'add (calc)');
  assert.equal(say('github.get_file', { path: 'README.md' }), 'get_file (github) README.md');
  assert.deepEqual(toolWords('calc.add', {}, 'done').verb, { text: 'add (calc)', code: false });
  assert.deepEqual(toolWords('deploy', { name: 'staging' }, 'done'), { verb: { text: 'deploy', code: true }, subject: [{ text: 'staging', code: true }] });
  assert.equal(say('weird', 'not an object'), 'weird');
  assert.equal(say('.hidden', {}), '.hidden');
  assert.equal(say('constructor', {}), 'constructor', 'a name on Object.prototype is not a wording');
});

test("a permission prompt's question and undo's not-reversible calls in the same words (s26, words26)", async () => {
  const ask = (tool: string, args: unknown) => partsText(askWords(tool, args));
  assert.equal(ask('run_command', { command: 'npm test' }), 'Run npm test?');
  assert.equal(ask('write_file', { path: 'notes.md', content: 'x' }), 'Write notes.md?');
  assert.equal(ask('list_directory', {}), 'List the workspace folder?');
  assert.equal(ask('calc.add', { a: 1 }), 'Allow add (calc) to run?', 'an MCP tool by its name for a person');
  assert.equal(ask('deploy_site', { path: 'dist' }), 'Allow deploy_site to run?', 'a tool without words keeps its name');
  assert.deepEqual(
    askWords('run_command', { command: 'npm test' }).filter((part) => part.code),
    [{ text: 'npm test', code: true }],
    'the command as code',
  );
  const sources = [createBuiltinToolSource({ workspaceRoots: () => ['/tmp'] }), createMemoryToolSource({} as MemoryStore), createTodoToolSource({} as PlanStore)];
  for (const name of (await Promise.all(sources.map((source) => source.tools()))).flat().map((tool) => tool.name)) {
    assert.ok(!ask(name, {}).includes('_'), `${name}'s question: "${ask(name, {})}"`);
  }
  assert.equal(wordsText(unrecordedWords('run_command', 'make deploy')), 'Ran make deploy');
  assert.equal(wordsText(unrecordedWords('calc.add', '{"a":1}')), 'add (calc) {"a":1}');
});
