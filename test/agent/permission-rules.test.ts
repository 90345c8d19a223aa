import assert from 'node:assert/strict';
import { test } from 'node:test';
import { narrowestRule, PermissionGate, ruleMatches } from '../../src/agent/permissions';

// The rules `allow_always` adds (issue 11): the narrowest rule for the call, never broader than it.
const allows = (rule: string, tool: string, subject: string | undefined) => ruleMatches(rule, tool, subject, 'allow', 'linux');
const commandRule = (line: string) => {
  const rule = narrowestRule('run_command', line, 'linux');
  assert.ok(rule, `a rule for ${JSON.stringify(line)}`);
  return rule;
};

test('\\* in a rule is a literal star; * still matches anything', () => {
  assert.equal(allows('write_file:src/\\*.ts', 'write_file', 'src/*.ts'), true);
  assert.equal(allows('write_file:src/\\*.ts', 'write_file', 'src/a.ts'), false);
  assert.equal(allows('write_file:src/*.ts', 'write_file', 'src/a.ts'), true);
  assert.equal(allows('run_command:ls \\*.ts', 'run_command', 'ls *.ts'), true);
  assert.equal(allows('run_command:ls \\*.ts', 'run_command', 'ls a.ts'), false);
  assert.equal(allows('run_command:ls *.ts', 'run_command', 'ls a.ts'), true);
  assert.equal(ruleMatches('run_command:rm \\*', 'run_command', 'rm -rf /', 'deny'), false, 'a deny rule reads \\* as a star too');
  assert.equal(ruleMatches('run_command:rm \\*', 'run_command', 'x; rm *', 'deny'), true);
});

test('narrowestRule: the command line, its stars escaped, for run_command', () => {
  assert.equal(commandRule('git status'), 'run_command:git status');
  assert.equal(commandRule('ls *.ts'), 'run_command:ls \\*.ts');
  assert.equal(narrowestRule('write_file', 'src/a*.ts'), 'write_file:src/a\\*.ts');
  assert.equal(narrowestRule('edit_file', 'notes/todo.md'), 'edit_file:notes/todo.md');
  assert.equal(narrowestRule('memory_forget', 'm-1'), 'memory_forget:m-1');
  assert.equal(narrowestRule('calc.add', undefined), 'calc.add', 'a tool without a subject: the tool');
});

test('the rule made for a command line allows that line and nothing broader', () => {
  const refused: [string, string[]][] = [
    ['git status', ['git status; rm -rf x', 'git status && rm -rf x', 'git status -s', 'git status $(rm -rf x)', 'git status > f', 'git', 'git statusx']],
    ['ls *.ts', ['ls a.ts', "ls '*.ts'", 'ls *.tsx', 'ls *.ts; id', 'ls x *.ts']],
    ["rm '*'", ['rm *', 'rm -rf *', "rm '*' *"]],
    ["rm '{a,b}'", ['rm {a,b}']],
    ["cat '~/x'", ['cat ~/x']],
    ['git commit -m "fix bug"', ['git commit -m "fix bug" --amend', 'git commit -m "fix bug"; id', 'git commit -m "fix $(id)"']],
    ['npm test && npm run lint', ['npm test && npm run lint; id', 'npm test || npm run lint', 'npm test && npm run lint && id']],
    ['echo a\\*b', ['echo axb', 'echo a\\xb']],
  ];
  for (const [line, others] of refused) {
    const rule = commandRule(line);
    assert.equal(allows(rule, 'run_command', line), true, `${rule} allows its own line ${JSON.stringify(line)}`);
    for (const other of others) assert.equal(allows(rule, 'run_command', other), false, `${rule} must not allow ${JSON.stringify(other)}`);
  }
});

test('attack: whitespace inside a word of the approved line does not widen its rule (quoted runs, tabs, NBSP, BOM, edges)', () => {
  // A model asks for a line whose words hold whitespace the shell keeps (inside quotes) or does not split
  // on (NBSP, U+FEFF): the rule allow_always writes must not allow the line with that whitespace changed.
  const refused: [string, string[]][] = [
    ["rm -rf 'old  backups'", ["rm -rf 'old backups'", 'rm -rf "old backups"']],
    ["rm -rf 'a\tb'", ["rm -rf 'a b'"]],
    ["rm 'a\nb'", ["rm 'a b'"]],
    ['rm\u00a0-rf /', ['rm -rf /']],
    ['echo\ufeffhi', ['echo hi']],
    ['rm -rf /\u00a0', ['rm -rf /']],
    ['\u3000rm -rf /', ['rm -rf /']],
  ];
  for (const [line, others] of refused) {
    const rule = commandRule(line);
    assert.equal(allows(rule, 'run_command', line), true, `${JSON.stringify(rule)} allows its own line`);
    for (const other of others) assert.equal(allows(rule, 'run_command', other), false, `${JSON.stringify(rule)} must not allow ${JSON.stringify(other)}`);
  }
  assert.equal(allows(commandRule('git   status\t-s'), 'run_command', 'git status -s'), true, 'blanks between words still do not matter');
  assert.equal(allows('run_command:git  status*', 'run_command', 'git status -s'), true, 'nor in a hand-written rule');
});

test('attack: the rule for a line with a $variable or a comment allows only that variable and that comment', () => {
  // The line's shape held `$` without the variable's name, and `#` without the comment's text: the rule
  // allow_always wrote for `rm -rf $BUILD_DIR` allowed `rm -rf $HOME` (cmd.exe reads no comment: `#` and
  // what follows are words there).
  const refused: [string, string[]][] = [
    ['rm -rf $BUILD_DIR', ['rm -rf $HOME', 'rm -rf $B']],
    ['rm -rf $TMPDIR/build', ['rm -rf $HOME/build']],
    ['rm -rf "$TMPDIR"/x', ['rm -rf "$HOME"/x']],
    ['echo $1', ['echo $2', 'echo $@']],
    ['echo $$', ['echo $!']],
    ['git push # later', ['git push # --force']],
  ];
  for (const [line, others] of refused) {
    const rule = commandRule(line);
    assert.equal(allows(rule, 'run_command', line), true, `${JSON.stringify(rule)} allows its own line`);
    for (const other of others) assert.equal(allows(rule, 'run_command', other), false, `${JSON.stringify(rule)} must not allow ${JSON.stringify(other)}`);
  }
  const rule = narrowestRule('run_command', 'git push # later', 'win32');
  assert.ok(rule === undefined || !ruleMatches(rule, 'run_command', 'git push # --force', 'allow', 'win32'), 'nor on Windows');
});

test('attack: the rule for ~/x (the home folder) does not allow ~"/x" or ~\\/x (a folder named ~ here)', () => {
  // The shell expands a leading ~ only when nothing up to the first unquoted / is quoted.
  const rule = commandRule('rm -rf ~/old');
  for (const other of ['rm -rf ~"/old"', 'rm -rf ~""/old', 'rm -rf ~\\/old', "rm -rf ~'/old'", "rm -rf ''~/old", 'rm -rf ""~/old']) {
    assert.equal(allows(rule, 'run_command', other), false, `${JSON.stringify(rule)} must not allow ${JSON.stringify(other)}`);
  }
  assert.equal(allows(rule, 'run_command', 'rm -rf ~/old'), true);
  assert.equal(allows('run_command:cat ~/x', 'run_command', "cat '~/x'"), false, 'nor the other way round');
  assert.equal(allows("run_command:rm -rf '~/old'", 'run_command', 'rm -rf ~"/old"'), true, 'both name the folder ~ here');
});

test('a path rule with a backslash before a star stays exact', () => {
  const rule = narrowestRule('write_file', 'odd\\*name')!;
  assert.equal(allows(rule, 'write_file', 'odd\\*name'), true);
  assert.equal(allows(rule, 'write_file', 'odd\\xname'), false);
  assert.equal(allows(rule, 'write_file', 'odd*name'), false);
});

test('no rule when none could match only this call', () => {
  assert.equal(narrowestRule('run_command', "echo 'unterminated", 'linux'), undefined, 'an allow rule never matches an incomplete line');
  assert.equal(narrowestRule('run_command', 'git status & calc', 'win32'), undefined, 'nor, on Windows, a line cmd.exe reads differently');
  assert.equal(narrowestRule('run_command', `echo ${'x'.repeat(2000)}`), undefined, 'nor one over the 2000-character limit of a rule');
});

test('hand-written rules keep matching as before (quote removal, shapes)', () => {
  assert.equal(allows('run_command:git status*', 'run_command', '"git" \'status\' -s'), true);
  assert.equal(allows('run_command:echo *', 'run_command', 'echo *.txt'), true);
  assert.equal(allows("run_command:ls '*.ts'", 'run_command', 'ls *.ts'), false, 'a quoted star is not the glob the shell expands');
});

test('the gate: allow_always writes the narrowest rule, then allows; no rule when none fits the call', async () => {
  const written: string[] = [];
  const gate = new PermissionGate(
    () => ({ permission_mode: 'ask', permission_rules: { allow: [], deny: [] } }),
    async () => ({ decision: 'allow_always', reason: 'answered' }),
    () => undefined,
    async (rule) => {
      written.push(rule);
    },
  );
  const check = (subject: string) => gate.check({ conversationId: 'c1', source: 'ws', tool: 'run_command', arguments: { command: subject }, subject, signal: new AbortController().signal });
  assert.deepEqual(await check('ls *.ts'), { decision: 'allow_always', reason: 'answered' });
  assert.deepEqual(await check("echo 'unterminated"), { decision: 'allow_always', reason: 'answered' }, 'allowed once, without a rule');
  assert.deepEqual(written, ['run_command:ls \\*.ts']);
});

/** The rule glob as a regular expression, as it was matched before s25 (the reference for what a rule means). */
function referenceGlob(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    if (glob[i] === '\\' && glob[i + 1] === '*') {
      source += '\\*';
      i++;
    } else source += glob[i] === '*' ? '.*' : glob[i].replace(/[.+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's');
}

test("attack: a rule of many stars against a model's long, nearly matching path is decided at once", { timeout: 30_000 }, () => {
  // As `.*` each star, this took O(n^k): minutes (the runner's per-file timeout fails the file), not ms.
  const subject = 'a'.repeat(50_000);
  assert.equal(allows('read_file:*a*a*a*a*a*a*b', 'read_file', subject), false);
  assert.equal(allows('read_file:*a*a*a*a*a*a*', 'read_file', subject), true);
  assert.equal(ruleMatches('read_file:*a*a*a*a*a*b', 'read_file', `${subject}\n${subject}`, 'deny'), false);
});

test('rule globs mean what they meant: pieces between stars against the reference expression (seeded texts)', () => {
  let seed = 7;
  const pick = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed % n);
  const alphabet = ['a', 'b', '*', '\\*', '\\', '\n', '.', '('];
  const textAlphabet = ['a', 'b', '*', '\\', '\n', '.', '('];
  const make = (from: string[], most: number) => Array.from({ length: pick(most) }, () => from[pick(from.length)]).join('');
  for (let i = 0; i < 20_000; i += 1) {
    const glob = make(alphabet, 7);
    const text = make(textAlphabet, 9);
    // read_file's subject part (not a shell tool): the rule's glob alone decides.
    assert.equal(allows(`read_file:${glob}`, 'read_file', text), referenceGlob(glob).test(text), `${JSON.stringify(glob)} on ${JSON.stringify(text)}`);
  }
});
