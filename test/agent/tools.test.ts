import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, constants as fsConstants, openSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { appendFile, mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, symlink, truncate, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { createBuiltinToolSource } from '../../src/agent/tools/builtin/index';
import { READ_CAP_BYTES } from '../../src/agent/tools/builtin/read-file';
import { LIST_MAX_ENTRIES } from '../../src/agent/tools/builtin/list-directory';
import { SEARCH_MATCH_TIME_LIMIT_MS, SEARCH_MAX_MATCHES } from '../../src/agent/tools/builtin/search-files';
import { createCustomToolSource, type CustomToolConfig } from '../../src/agent/tools/custom';
import { globToRegExp } from '../../src/agent/tools/glob';
import { createMemoryToolSource, type MemoryEntry, type MemoryStore } from '../../src/agent/tools/memory';
import { ToolRegistry, toolInfo } from '../../src/agent/tools/registry';
import { ToolError, type Tool, type ToolOutput, type ToolSource } from '../../src/agent/tools/types';
import { resolveInWorkspace, workspaceSubject } from '../../src/agent/tools/workspace';

const LIMIT = { timeout: 30_000 };
const posix = process.platform !== 'win32';

interface Fixture {
  /** The workspace root (real path). */
  ws: string;
  /** A folder beside it, outside the workspace. */
  outside: string;
  tools: Map<string, Tool>;
  run(name: string, args: Record<string, unknown>, conversationId?: string): Promise<ToolOutput>;
}

async function fixture(t: TestContext): Promise<Fixture> {
  const base = await realpath(await mkdtemp(path.join(tmpdir(), 'tools-test-')));
  t.after(() => rm(base, { recursive: true, force: true }));
  const ws = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  await mkdir(ws);
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret.txt'), 'top secret\n');
  const source = createBuiltinToolSource({ workspaceRoots: () => [ws] });
  const tools = new Map((await source.tools()).map((tool) => [tool.name, tool]));
  return {
    ws,
    outside,
    tools,
    run: (name, args, conversationId = 'c1') => tools.get(name)!.run(args, { conversationId, signal: new AbortController().signal }),
  };
}

/** Asserts that the call fails with a ToolError whose message matches. */
async function refuses(call: Promise<unknown>, message: RegExp): Promise<void> {
  await assert.rejects(call, (error: unknown) => {
    assert.ok(error instanceof ToolError, `expected a ToolError, got ${String(error)}`);
    assert.match(error.message, message);
    return true;
  });
}

// ---------------------------------------------------------------------------------------------
// read_file

test('read_file returns the text exactly, and pages by lines with offset/limit', LIMIT, async (t) => {
  const f = await fixture(t);
  const text = 'one\ntwo\r\nthree\nfour\nfive';
  await writeFile(path.join(f.ws, 'a.txt'), text);
  assert.equal((await f.run('read_file', { path: 'a.txt' })).content, text);
  assert.equal((await f.run('read_file', { path: path.join(f.ws, 'a.txt') })).content, text, 'absolute path inside');

  const middle = (await f.run('read_file', { path: 'a.txt', offset: 2, limit: 2 })).content;
  assert.ok(middle.startsWith('two\r\nthree\n'), middle);
  assert.match(middle, /showing lines 2-3; the file goes on: next offset=4/);

  const end = (await f.run('read_file', { path: 'a.txt', offset: 4 })).content;
  assert.ok(end.startsWith('four\nfive\n'), end);
  assert.match(end, /lines 4-5, the end of the file/);

  assert.match((await f.run('read_file', { path: 'a.txt', offset: 9 })).content, /has 5 lines; offset 9 is past the end/);
  await writeFile(path.join(f.ws, 'empty.txt'), '');
  assert.equal((await f.run('read_file', { path: 'empty.txt' })).content, '(empty file)');
});

test('read_file caps what it returns and says how to read on', LIMIT, async (t) => {
  const f = await fixture(t);
  const line = `${'x'.repeat(99)}\n`; // 100 bytes a line
  const lines = Math.ceil((READ_CAP_BYTES * 1.5) / 100);
  await writeFile(path.join(f.ws, 'big.txt'), line.repeat(lines));
  const out = (await f.run('read_file', { path: 'big.txt' })).content;
  const body = out.slice(0, out.lastIndexOf('\n['));
  assert.ok(Buffer.byteLength(body) <= READ_CAP_BYTES, 'within the cap');
  const shown = Math.floor(READ_CAP_BYTES / 100);
  assert.match(out, new RegExp(`\\[truncated at 256 KiB: showing lines 1-${shown} of a .* file; read on with offset=${shown + 1}\\]$`));
  const rest = (await f.run('read_file', { path: 'big.txt', offset: shown + 1 })).content;
  assert.match(rest, new RegExp(`lines ${shown + 1}-${lines}, the end of the file`));

  // One line longer than the cap: its start, not nothing.
  await writeFile(path.join(f.ws, 'minified.js'), 'y'.repeat(READ_CAP_BYTES * 2));
  const minified = (await f.run('read_file', { path: 'minified.js' })).content;
  assert.match(minified, /the start of line 1, which is longer than that/);
  assert.ok(minified.length < READ_CAP_BYTES + 500);
});

test('read_file refuses binary files, folders and missing files clearly', LIMIT, async (t) => {
  const f = await fixture(t);
  await writeFile(path.join(f.ws, 'program.bin'), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0, 0, 0, 0, 0, 0, 0]));
  await refuses(f.run('read_file', { path: 'program.bin' }), /program\.bin is a binary file \(14 B\); read_file only reads text/);
  await mkdir(path.join(f.ws, 'dir'));
  await refuses(f.run('read_file', { path: 'dir' }), /dir is a directory.*list_directory/);
  await refuses(f.run('read_file', { path: 'nope.txt' }), /nope\.txt does not exist/);
  await refuses(f.run('read_file', { path: 'a', offset: 0 }), /offset must be 1 or more/);
});

test('read_file of an image (by its bytes) gives the model a note and the image to show the user', LIMIT, async (t) => {
  const f = await fixture(t);
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48]);
  await writeFile(path.join(f.ws, 'image.png'), png);
  const output = await f.run('read_file', { path: 'image.png' });
  assert.match(output.content, /image\.png is an image \(image\/png, 14 B\): it is shown to the user/);
  assert.equal(output.image?.mime, 'image/png');
  assert.ok(output.image?.bytes.equals(png));
});

test('read_file and list_directory of a named pipe answer at once, holding no thread of the pool', { timeout: 20_000, skip: !posix }, async (t) => {
  // open() of a FIFO without a writer blocks a libuv thread until one comes: four such reads would
  // hold the whole pool, and with it every fsync of the store.
  const f = await fixture(t);
  const fifo = path.join(f.ws, 'pipe');
  await new Promise<void>((resolve, reject) => spawn('mkfifo', [fifo]).on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`mkfifo ${code}`)))));
  // Should the test fail, release a blocked open so the process can end.
  t.after(() => {
    try {
      closeSync(openSync(fifo, fsConstants.O_WRONLY | fsConstants.O_NONBLOCK));
    } catch {
      // nobody was waiting on it
    }
  });
  await refuses(f.run('read_file', { path: 'pipe' }), /pipe is not a regular file/);
  await refuses(f.run('list_directory', { path: 'pipe' }), /pipe is a file, not a folder/);
});

// ---------------------------------------------------------------------------------------------
// write_file / edit_file

test('write_file creates parent folders, overwrites atomically, keeps the mode', LIMIT, async (t) => {
  const f = await fixture(t);
  const created = await f.run('write_file', { path: 'deep/er/new.txt', content: 'héllo\n' });
  assert.equal(created.content, 'Created deep/er/new.txt (7 B).');
  assert.equal(await readFile(path.join(f.ws, 'deep/er/new.txt'), 'utf8'), 'héllo\n');

  const script = path.join(f.ws, 'run.sh');
  await writeFile(script, '#!/bin/sh\n');
  if (posix) await chmod(script, 0o755);
  const over = await f.run('write_file', { path: 'run.sh', content: '#!/bin/sh\necho hi\n' });
  assert.equal(over.content, 'Overwrote run.sh (18 B).');
  assert.equal(await readFile(script, 'utf8'), '#!/bin/sh\necho hi\n');
  if (posix) assert.equal((await stat(script)).mode & 0o777, 0o755, 'mode kept');
  assert.deepEqual(
    (await readdir(f.ws)).filter((n) => n.endsWith('.tmp')),
    [],
    'no temp file left',
  );

  await refuses(f.run('write_file', { path: 'deep', content: 'x' }), /deep is a directory/);
  await refuses(f.run('write_file', { path: 'run.sh/x.txt', content: 'x' }), /parent folders is a file/);
});

test('write_file and edit_file keep the permission bits of a file they replace, never set-user-ID or set-group-ID', { ...LIMIT, skip: !posix }, async (t) => {
  // A service running as root replacing a set-user-ID program's text would leave a root-owned
  // set-user-ID program with the model's content: any local user could run it as root.
  const f = await fixture(t);
  const program = path.join(f.ws, 'helper');
  await writeFile(program, '#!/bin/sh\necho trusted\n');
  await chmod(program, 0o4755);
  assert.equal((await stat(program)).mode & 0o7777, 0o4755, 'the fixture holds a set-user-ID file');
  await f.run('write_file', { path: 'helper', content: '#!/bin/sh\necho model\n' });
  assert.equal((await stat(program)).mode & 0o7777, 0o755, 'write_file');
  await chmod(program, 0o4755);
  await f.run('edit_file', { path: 'helper', old_string: 'model', new_string: 'edited' });
  assert.equal((await stat(program)).mode & 0o7777, 0o755, 'edit_file');
  assert.equal(await readFile(program, 'utf8'), '#!/bin/sh\necho edited\n');
});

test('edit_file replaces a unique match, refuses missing or ambiguous ones, replace_all', LIMIT, async (t) => {
  const f = await fixture(t);
  const file = path.join(f.ws, 'code.ts');
  const original = 'const a = 1;\nconst b = 2;\nconst a2 = 1;\n';
  await writeFile(file, original);

  const ok = await f.run('edit_file', { path: 'code.ts', old_string: 'const b = 2;', new_string: 'const b = 3; // $& $1' });
  assert.equal(ok.content, 'Replaced 1 occurrence in code.ts.');
  assert.equal(await readFile(file, 'utf8'), 'const a = 1;\nconst b = 3; // $& $1\nconst a2 = 1;\n', 'replacement taken literally');

  await refuses(f.run('edit_file', { path: 'code.ts', old_string: 'const c', new_string: 'x' }), /old_string was not found in code\.ts.*Nothing was changed/);
  await refuses(f.run('edit_file', { path: 'code.ts', old_string: ' = 1;', new_string: ' = 9;' }), /old_string matches 2 places in code\.ts.*replace_all/);
  assert.equal(await readFile(file, 'utf8'), 'const a = 1;\nconst b = 3; // $& $1\nconst a2 = 1;\n', 'unchanged after refusals');

  const all = await f.run('edit_file', { path: 'code.ts', old_string: ' = 1;', new_string: ' = 9;', replace_all: true });
  assert.equal(all.content, 'Replaced 2 occurrences in code.ts.');
  assert.equal(await readFile(file, 'utf8'), 'const a = 9;\nconst b = 3; // $& $1\nconst a2 = 9;\n');

  await refuses(f.run('edit_file', { path: 'code.ts', old_string: '', new_string: 'x' }), /old_string is empty/);
  await refuses(f.run('edit_file', { path: 'missing.ts', old_string: 'a', new_string: 'b' }), /missing\.ts does not exist/);
  await refuses(f.run('edit_file', { path: 'code.ts', old_string: 'a', new_string: 'b', replace_all: 'yes' }), /argument replace_all must be a boolean, got a string/);
  await refuses(f.run('edit_file', { path: 'code.ts', old_string: 'a' }), /edit_file: missing required argument new_string/);
  await refuses(f.run('edit_file', { file_path: 'code.ts', old_string: 'a', new_string: 'b' }), /unknown argument file_path/);
});

test('edit_file matches "\\n" in old_string against a file with CRLF line endings, and refuses non-UTF-8', LIMIT, async (t) => {
  const f = await fixture(t);
  const file = path.join(f.ws, 'win.txt');
  await writeFile(file, 'first\r\nsecond\r\nthird\r\n');
  await f.run('edit_file', { path: 'win.txt', old_string: 'first\nsecond', new_string: 'one\ntwo' });
  assert.equal(await readFile(file, 'utf8'), 'one\r\ntwo\r\nthird\r\n');

  await writeFile(path.join(f.ws, 'latin1.txt'), Buffer.from('caf\xe9\n', 'latin1'));
  await refuses(f.run('edit_file', { path: 'latin1.txt', old_string: 'caf', new_string: 'tea' }), /not UTF-8 text/);
});

// ---------------------------------------------------------------------------------------------
// list_directory / search_files

test('list_directory lists sorted entries, folders with a trailing /, capped', LIMIT, async (t) => {
  const f = await fixture(t);
  await mkdir(path.join(f.ws, 'src'));
  await writeFile(path.join(f.ws, 'b.txt'), '');
  await writeFile(path.join(f.ws, 'a.txt'), '');
  await writeFile(path.join(f.ws, 'src', 'x.ts'), '');
  if (posix) await symlink(path.join(f.ws, 'src'), path.join(f.ws, 'link-to-src'));
  assert.equal((await f.run('list_directory', {})).content, ['a.txt', 'b.txt', ...(posix ? ['link-to-src/'] : []), 'src/'].join('\n'));
  assert.equal((await f.run('list_directory', { path: 'src' })).content, 'x.ts');
  await mkdir(path.join(f.ws, 'empty'));
  assert.equal((await f.run('list_directory', { path: 'empty' })).content, '(empty is empty)');
  const second = path.join(path.dirname(f.ws), 'second');
  await mkdir(second);
  const twoRoots = (await createBuiltinToolSource({ workspaceRoots: () => [f.ws, second] }).tools()).find((tool) => tool.name === 'list_directory')!;
  const listed = (await twoRoots.run({}, { conversationId: 'c', signal: new AbortController().signal })).content;
  assert.ok(listed.endsWith(`\n[this is the first workspace folder; the others are ${second}]`), listed);
  await refuses(f.run('list_directory', { path: 'a.txt' }), /a\.txt is a file/);

  await mkdir(path.join(f.ws, 'many'));
  await Promise.all(Array.from({ length: LIST_MAX_ENTRIES + 5 }, (_, i) => writeFile(path.join(f.ws, 'many', `f${String(i).padStart(4, '0')}`), '')));
  const many = (await f.run('list_directory', { path: 'many' })).content.split('\n');
  assert.equal(many.length, LIST_MAX_ENTRIES + 1);
  assert.equal(many[0], 'f0000');
  assert.equal(many[many.length - 1], '[... 5 more entries not shown]');
});

test('search_files finds lines by regex or plain text, honours path and glob, skips node_modules, .git and binaries', LIMIT, async (t) => {
  const f = await fixture(t);
  const put = async (rel: string, content: string | Buffer) => {
    await mkdir(path.dirname(path.join(f.ws, rel)), { recursive: true });
    await writeFile(path.join(f.ws, rel), content);
  };
  await put('src/a.ts', 'import x;\nfunction hello() {}\nconst y = hello();\n');
  await put('src/sub/b.js', 'hello world\n');
  await put('README.md', 'Say Hello\n');
  await put('node_modules/dep/index.js', 'hello from dep\n');
  await put('.git/config', 'hello git\n');
  await put('bin.dat', Buffer.concat([Buffer.from('hello'), Buffer.from([0, 1, 2])]));

  assert.equal((await f.run('search_files', { pattern: 'hello' })).content, ['src/a.ts:2: function hello() {}', 'src/a.ts:3: const y = hello();', 'src/sub/b.js:1: hello world'].join('\n'));
  assert.equal((await f.run('search_files', { pattern: 'hel+o\\(\\)', glob: '*.ts' })).content, 'src/a.ts:2: function hello() {}\nsrc/a.ts:3: const y = hello();');
  assert.equal((await f.run('search_files', { pattern: 'hello', path: 'src/sub' })).content, 'src/sub/b.js:1: hello world');
  assert.equal((await f.run('search_files', { pattern: 'hello', glob: 'src/**/*.js' })).content, 'src/sub/b.js:1: hello world');
  assert.equal((await f.run('search_files', { pattern: 'hello', ignore_case: true, glob: '*.md' })).content, 'README.md:1: Say Hello');
  // Not a valid regex: searched as the text itself.
  assert.equal(
    (await f.run('search_files', { pattern: 'hello(' })).content,
    'src/a.ts:2: function hello() {}\nsrc/a.ts:3: const y = hello();\n[pattern is not a valid regular expression; it was searched as plain text]',
  );
  assert.match((await f.run('search_files', { pattern: 'absent' })).content, /^No matches for absent in \./);

  await put('many.txt', 'match\n'.repeat(SEARCH_MAX_MATCHES + 50));
  const capped = (await f.run('search_files', { pattern: 'match', path: 'many.txt' })).content.split('\n');
  assert.equal(capped.length, SEARCH_MAX_MATCHES + 1);
  assert.equal(capped[0], 'many.txt:1: match');
  assert.match(capped[capped.length - 1], /stopped at 200 matches/);
});

test('search_files: a backtracking pattern or glob is stopped by a time limit, and the service thread stays free meanwhile', { timeout: 60_000 }, async (t) => {
  const f = await fixture(t);
  const name = `${'a'.repeat(40)}.txt`;
  await writeFile(path.join(f.ws, name), `${'a'.repeat(40)}!\nplain line\n`);
  for (const args of [{ pattern: '(a+)+$' }, { pattern: 'plain', glob: `${'*a'.repeat(20)}*b` }]) {
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 50);
    try {
      await refuses(f.run('search_files', args), new RegExp(`took more than ${SEARCH_MATCH_TIME_LIMIT_MS / 1000} s to match and was stopped`));
    } finally {
      clearInterval(ticker);
    }
    assert.ok(ticks > 0, `the event loop ran while ${JSON.stringify(args)} was matched`);
  }
  // An ordinary search is unaffected.
  assert.equal((await f.run('search_files', { pattern: 'plain', glob: '*.txt' })).content, `${name}:2: plain line`);
});

test('read_file of a huge file on one line returns its start, cut, without reading it all', { timeout: 60_000 }, async (t) => {
  const f = await fixture(t);
  const file = path.join(f.ws, 'one-line.txt');
  // 1 MiB of text, then a sparse hole up to 200 MiB (NUL bytes, still line 1), then a second line.
  await writeFile(file, 'z'.repeat(1024 * 1024));
  const size = 200 * 1024 * 1024;
  await truncate(file, size);
  await appendFile(file, '\nsecond line\n');
  const first = (await f.run('read_file', { path: 'one-line.txt' })).content;
  assert.ok(first.startsWith('z'.repeat(1000)));
  assert.match(first, /\[truncated at 256 KiB: showing the start of line 1, which is longer than that, of a 200 MiB file; read on with offset=2\]$/);
  assert.ok(first.length < READ_CAP_BYTES + 500);
  assert.equal((await f.run('read_file', { path: 'one-line.txt', offset: 2 })).content, 'second line\n[showing lines 2-2, the end of the file]');
});

test('globToRegExp', () => {
  assert.ok(globToRegExp('*.ts').test('a.ts'));
  assert.ok(!globToRegExp('*.ts').test('dir/a.ts'));
  assert.ok(globToRegExp('src/**/*.ts').test('src/a.ts'));
  assert.ok(globToRegExp('src/**/*.ts').test('src/x/y/a.ts'));
  assert.ok(globToRegExp('*.{ts,js}').test('a.js'));
  assert.ok(globToRegExp('file?.[!a]x').test('file1.bx'));
  assert.ok(!globToRegExp('file?.[!a]x').test('file1.ax'));
});

// ---------------------------------------------------------------------------------------------
// Confinement

test('paths that leave the workspace are refused by every file tool, and nothing is written outside', LIMIT, async (t) => {
  const f = await fixture(t);
  const otherTemp = await realpath(await mkdtemp(path.join(tmpdir(), 'tools-other-')));
  t.after(() => rm(otherTemp, { recursive: true, force: true }));
  await writeFile(path.join(otherTemp, 'other.txt'), 'other\n');
  await mkdir(path.join(f.ws, 'sub'));

  const escapes: [string, RegExp][] = [
    ['../outside/secret.txt', /path \.\.\/outside\/secret\.txt is outside the workspace/],
    ['../x', /path \.\.\/x is outside the workspace/],
    ['sub/../../outside/secret.txt', /is outside the workspace/],
    ['/etc/passwd', /path \/etc\/passwd is outside the workspace/],
    [path.join(otherTemp, 'other.txt'), /is outside the workspace/],
    [path.join(f.outside, 'secret.txt'), /is outside the workspace/],
  ];
  if (posix) {
    await symlink(path.join(f.outside, 'secret.txt'), path.join(f.ws, 'file-link'));
    await symlink(f.outside, path.join(f.ws, 'dir-link'));
    await symlink(f.outside, path.join(f.ws, 'sub', 'nested-dir-link'));
    await symlink(path.join(f.outside, 'not-there'), path.join(f.ws, 'dangling'));
    const viaLink = /outside the workspace \(a symbolic link leads out of it\)/;
    escapes.push(
      ['file-link', viaLink],
      ['dir-link', viaLink],
      ['dir-link/secret.txt', viaLink],
      ['dir-link/new.txt', viaLink],
      ['dir-link/new/deeper/file.txt', viaLink],
      ['sub/nested-dir-link/secret.txt', viaLink],
      [path.join(f.ws, 'dir-link', 'secret.txt'), viaLink],
      ['dangling', /broken symbolic link/],
      ['dangling/x.txt', /broken symbolic link/],
    );
  }
  for (const [p, message] of escapes) {
    await refuses(f.run('read_file', { path: p }), message);
    await refuses(f.run('write_file', { path: p, content: 'PWNED' }), message);
    await refuses(f.run('edit_file', { path: p, old_string: 'top', new_string: 'PWNED' }), message);
    await refuses(f.run('list_directory', { path: p }), message);
    await refuses(f.run('search_files', { pattern: 'secret', path: p }), message);
    await refuses(f.run('run_command', { command: 'echo PWNED > pwned.txt', cwd: p }), message);
  }
  assert.deepEqual((await readdir(f.outside)).sort(), ['secret.txt'], 'nothing created outside');
  assert.equal(await readFile(path.join(f.outside, 'secret.txt'), 'utf8'), 'top secret\n');
  assert.deepEqual(await readdir(otherTemp), ['other.txt']);

  if (posix) {
    // A search of the whole workspace does not follow links out of it.
    assert.match((await f.run('search_files', { pattern: 'top secret' })).content, /^No matches/);
    // Links that stay inside are fine.
    await writeFile(path.join(f.ws, 'sub', 'inner.txt'), 'inner\n');
    await symlink(path.join(f.ws, 'sub'), path.join(f.ws, 'inner-link'));
    assert.equal((await f.run('read_file', { path: 'inner-link/inner.txt' })).content, 'inner\n');
    await f.run('write_file', { path: 'inner-link/made.txt', content: 'made\n' });
    assert.equal(await readFile(path.join(f.ws, 'sub', 'made.txt'), 'utf8'), 'made\n');
  }
});

test(
  'write_file, edit_file, read_file, search_files and list_directory stay inside while another process swaps a folder for a symbolic link to outside',
  { timeout: 120_000, skip: !posix },
  async (t) => {
    const f = await fixture(t);
    const sub = path.join(f.ws, 'sub');
    await mkdir(sub);
    await writeFile(path.join(sub, 'secret.txt'), 'inside\n');
    await writeFile(path.join(sub, 'target.txt'), 'AAA\n');
    await writeFile(path.join(f.outside, 'target.txt'), 'AAA\n');
    await writeFile(path.join(f.outside, 'only-outside.txt'), '');
    const outsideBefore = (await readdir(f.outside)).sort();
    // The attacker: swaps ws/sub (a real folder) for a link to outside and back, as fast as it can. While
    // sub is missing, a tool may create it as a folder: moved aside, it stays inside the workspace.
    const attacker = spawn(
      process.execPath,
      [
        '-e',
        `
    const fs = require('node:fs');
    const [sub, hold, link, outside] = process.argv.slice(1);
    fs.symlinkSync(outside, link);
    for (let n = 0; ; n++) {
      try { fs.renameSync(sub, hold); } catch {}
      try { fs.renameSync(link, sub); } catch { try { fs.renameSync(sub, sub + '.made-' + n); fs.renameSync(link, sub); } catch {} }
      try { fs.renameSync(sub, link); } catch {}
      try { fs.renameSync(hold, sub); } catch {}
    }
  `,
        sub,
        path.join(f.ws, 'hold'),
        path.join(f.ws, 'link'),
        f.outside,
      ],
      { stdio: 'ignore' },
    );
    t.after(() => attacker.kill('SIGKILL'));
    await new Promise((resolve) => setTimeout(resolve, 100)); // let it start swapping

    let leakedReads = 0;
    const settle = (work: Promise<ToolOutput>) =>
      work.then(
        (out) => out.content,
        (error: unknown) => String(error),
      );
    for (let i = 0; i < 200; i++) {
      await Promise.all([
        settle(f.run('write_file', { path: `sub/w${i}.txt`, content: `write ${i}\n` })),
        settle(f.run('write_file', { path: `sub/deeper/w${i}.txt`, content: `write ${i}\n` })),
        settle(f.run('edit_file', { path: 'sub/target.txt', old_string: 'AAA', new_string: 'AAA!' })),
        settle(f.run('read_file', { path: 'sub/secret.txt' })).then((text) => {
          if (text.includes('top secret')) leakedReads++;
        }),
        settle(f.run('search_files', { pattern: 'secret', path: 'sub', glob: 'secret.txt' })).then((text) => {
          if (text.includes('top secret')) leakedReads++;
        }),
        settle(f.run('list_directory', { path: 'sub' })).then((text) => {
          if (text.includes('only-outside.txt')) leakedReads++;
        }),
      ]);
    }
    // Gone before the checks and the fixture's removal of the folders (which met its renames: ENOTEMPTY).
    const exited = attacker.exitCode !== null || attacker.signalCode !== null ? Promise.resolve() : new Promise((resolve) => attacker.once('exit', resolve));
    attacker.kill('SIGKILL');
    await exited;
    assert.deepEqual((await readdir(f.outside)).sort(), outsideBefore, 'no file created outside');
    assert.equal(await readFile(path.join(f.outside, 'target.txt'), 'utf8'), 'AAA\n', 'the file outside was not edited');
    assert.equal(await readFile(path.join(f.outside, 'secret.txt'), 'utf8'), 'top secret\n');
    assert.equal(leakedReads, 0, 'read_file, search_files and list_directory never showed what is outside');
  },
);

test('resolveInWorkspace: relative to the first root, any root accepted, real paths returned', LIMIT, async (t) => {
  const f = await fixture(t);
  const second = path.join(path.dirname(f.ws), 'second');
  await mkdir(second);
  const roots = [f.ws, second];
  assert.equal(await resolveInWorkspace(roots, 'a/b.txt'), path.join(f.ws, 'a', 'b.txt'));
  assert.equal(await resolveInWorkspace(roots, '.'), f.ws);
  assert.equal(await resolveInWorkspace(roots, path.join(second, 'x.txt')), path.join(second, 'x.txt'));
  assert.equal(await resolveInWorkspace(roots, '../second/x.txt'), path.join(second, 'x.txt'), 'another root is inside the workspace');
  await refuses(resolveInWorkspace(roots, '../outside/secret.txt'), /outside the workspace/);
  await refuses(resolveInWorkspace([], 'a.txt'), /no workspace folder is open/);
  await refuses(resolveInWorkspace([path.join(f.ws, 'missing')], 'a.txt'), /does not exist/);
  await refuses(resolveInWorkspace(roots, ''), /path is empty/);
  await refuses(resolveInWorkspace(roots, 'a\0b'), /NUL/);
  if (posix) {
    // A root reached through a link (macOS /tmp is one) still works, by either spelling.
    const rootLink = path.join(path.dirname(f.ws), 'ws-link');
    await symlink(f.ws, rootLink);
    assert.equal(await resolveInWorkspace([rootLink], 'n.txt'), path.join(f.ws, 'n.txt'));
    assert.equal(await resolveInWorkspace([rootLink], path.join(rootLink, 'n.txt')), path.join(f.ws, 'n.txt'));
  }
});

test('the subject of file tools is the path relative to the workspace, however it is spelt', LIMIT, async (t) => {
  const f = await fixture(t);
  assert.equal(workspaceSubject([f.ws], './src/../b.txt'), 'b.txt');
  assert.equal(workspaceSubject([f.ws], path.join(f.ws, 'src', 'a.ts')), 'src/a.ts');
  assert.equal(workspaceSubject([f.ws], undefined), '.');
  assert.equal(workspaceSubject([f.ws], '../outside/secret.txt'), path.join(f.outside, 'secret.txt'));
  assert.equal(f.tools.get('write_file')!.subject!({ path: './x/../y.txt', content: '' }), 'y.txt');
  assert.equal(f.tools.get('list_directory')!.subject!({}), '.');
  assert.equal(f.tools.get('run_command')!.subject!({ command: 'ls -la | wc -l' }), 'ls -la | wc -l');
  assert.equal(f.tools.get('run_command')!.subject!({ command: ['git', 'commit', '-m', "it's done"] }), `git commit -m 'it'\\''s done'`);
});

// ---------------------------------------------------------------------------------------------
// Memory

class InMemoryMemory implements MemoryStore {
  entries: MemoryEntry[] = [];
  private clock = 0;

  async put(content: string): Promise<{ id: string }> {
    const now = new Date(Date.UTC(2024, 0, 1) + this.clock++ * 1000).toISOString();
    const entry = { id: randomUUID(), content, created_at: now, updated_at: now };
    this.entries.push(entry);
    return { id: entry.id };
  }

  search(query: string, limit: number): MemoryEntry[] {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    return this.newest()
      .filter((e) => words.every((w) => e.content.toLowerCase().includes(w)))
      .slice(0, limit);
  }

  async delete(id: string): Promise<boolean> {
    const before = this.entries.length;
    this.entries = this.entries.filter((e) => e.id !== id);
    return this.entries.length < before;
  }

  all(limit: number): MemoryEntry[] {
    return this.newest().slice(0, limit);
  }

  private newest(): MemoryEntry[] {
    return [...this.entries].reverse();
  }
}

test('memory tools: remember in one conversation, recall in another, forget', LIMIT, async () => {
  const memory = new InMemoryMemory();
  const tools = new Map((await createMemoryToolSource(memory).tools()).map((tool) => [tool.name, tool]));
  const run = (name: string, args: Record<string, unknown>, conversationId: string) => tools.get(name)!.run(args, { conversationId, signal: new AbortController().signal });

  const kept = await run('remember', { content: '  The user prefers tabs over spaces.  ' }, 'conv-A');
  const id = /id ([0-9a-f-]+)/.exec(kept.content)![1];
  await run('remember', { content: 'The staging server is staging.example.com' }, 'conv-A');

  const found = await run('recall', { query: 'TABS prefers' }, 'conv-B');
  assert.equal(found.content, `- [${id}] (2024-01-01) The user prefers tabs over spaces.`);
  const newest = await run('recall', { query: '', limit: 1 }, 'conv-B');
  assert.match(newest.content, /^- \[[0-9a-f-]+\] \(2024-01-01\) The staging server/);
  assert.equal(newest.content.split('\n').length, 1);

  assert.equal((await run('forget', { id }, 'conv-C')).content, `Forgot ${id}.`);
  assert.equal((await run('recall', { query: 'tabs' }, 'conv-C')).content, 'Nothing remembered matches "tabs".');
  await refuses(run('forget', { id }, 'conv-C'), /no remembered entry with id/);
  await refuses(run('remember', { content: '   ' }, 'conv-C'), /content is empty/);
  await refuses(run('recall', { query: 'x', limit: 0 }, 'conv-C'), /limit must be between 1 and 100/);
  await refuses(run('recall', {}, 'conv-C'), /recall: missing required argument query/);
});

// ---------------------------------------------------------------------------------------------
// Registry

test('registry: the same merged list while every source gives the same list (or none), a new one once any source gives another', async () => {
  const a: Tool[] = [{ name: 'a', description: 'A.', parameters: {}, inputSchema: { type: 'object', properties: {} }, run: async () => ({ content: 'a' }) } as unknown as Tool];
  let b: Tool[] = [];
  let area: Tool[] = [];
  const registry = new ToolRegistry([
    { name: 'fixed', followsArea: true, tools: async () => a },
    // A fresh empty array at each listing (a custom source without tools): still the same list.
    { name: 'changing', tools: async () => [...b] },
    { name: 'confined', followsArea: true, tools: async (where) => (where ? area : []) },
  ]);
  const first = await registry.list();
  assert.deepEqual(
    first.map((t) => t.name),
    ['a'],
  );
  assert.equal(await registry.list(), first, 'nothing changed: the same array');
  b = [{ ...a[0], name: 'b' }];
  const second = await registry.list();
  assert.notEqual(second, first);
  assert.deepEqual(
    second.map((t) => t.name),
    ['a', 'b'],
    'a source that gives another list: merged again',
  );
  assert.notEqual(await registry.list(), second, 'a source that gives a new array each time (with tools) is merged each time');
  const roots = { roots: ['/x'] } as unknown as Parameters<ToolRegistry['list']>[0];
  area = [{ ...a[0], name: 'c' }];
  const inArea = await registry.list(roots);
  assert.deepEqual(
    inArea.map((t) => t.name),
    ['a', 'c'],
    'an area: only the sources that follow it',
  );
  assert.equal(await registry.list(roots), inArea);
  area = [{ ...a[0], name: 'd' }];
  assert.deepEqual(
    (await registry.list(roots)).map((t) => t.name),
    ['a', 'd'],
    'the confined list changed: merged again',
  );
  b = [];
  assert.deepEqual(
    (await registry.list()).map((t) => t.name),
    ['a'],
    'the tools gone: merged again',
  );
});

test('registry lists the tools of every source, first source wins, follows changes, survives a failing source', LIMIT, async (t) => {
  const f = await fixture(t);
  let customConfig: CustomToolConfig[] = [
    { name: 'greet', description: 'Greets someone.', parameters: { who: 'string', times: 'number', loud: 'boolean' }, command: ['printf', '%s', '{who}'] },
    { name: 'read_file', description: 'A custom tool shadowed by the built-in one.', parameters: {}, command: ['true'] },
  ];
  let closed = 0;
  const failing: ToolSource = { name: 'broken', tools: async () => Promise.reject(new Error('server died')), close: async () => void closed++ };
  const registry = new ToolRegistry([
    createBuiltinToolSource({ workspaceRoots: () => [f.ws] }),
    createMemoryToolSource(new InMemoryMemory()),
    failing,
    createCustomToolSource(() => customConfig, { workspaceRoots: () => [f.ws] }),
  ]);

  const names = (await registry.list()).map((tool) => tool.name);
  assert.deepEqual(names, ['read_file', 'write_file', 'edit_file', 'list_directory', 'search_files', 'run_command', 'remember', 'recall', 'forget', 'greet']);
  assert.match((await registry.get('read_file'))!.description, /^Read a text file/, 'the built-in read_file wins');

  const infos = (await registry.list()).map(toolInfo);
  assert.deepEqual(
    infos.find((i) => i.name === 'greet'),
    { name: 'greet', description: 'Greets someone.', parameters: { who: 'string', times: 'number', loud: 'boolean' } },
  );
  assert.deepEqual(infos.find((i) => i.name === 'read_file')!.parameters, { path: 'string', offset: 'integer', limit: 'integer' });
  assert.deepEqual(infos.find((i) => i.name === 'run_command')!.parameters, { command: 'string | string[]', cwd: 'string', timeout_seconds: 'number' });
  for (const info of infos) {
    assert.ok(info.description.length > 10, `${info.name} has a description`);
    for (const type of Object.values(info.parameters)) assert.equal(typeof type, 'string');
  }
  const schema = (await registry.get('edit_file'))!.inputSchema;
  assert.equal(schema.type, 'object');
  assert.deepEqual(schema.required, ['path', 'old_string', 'new_string']);

  customConfig = [{ name: 'deploy', description: '', parameters: {}, command: ['true'] }];
  assert.equal(await registry.get('greet'), undefined, 'a removed custom tool is gone');
  assert.ok(await registry.get('deploy'), 'an added one appears');
  assert.equal((await registry.get('deploy'))!.description, 'Runs true (a custom tool of service.json).');

  await registry.close();
  assert.equal(closed, 1);
});
