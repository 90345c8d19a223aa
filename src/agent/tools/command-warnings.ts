import path from 'node:path';
import { parseShellLine } from './shell-line';
import { workspaceSubject } from './workspace';

/**
 * What a person approving a command should not miss: deleting recursively without asking, rewriting a
 * remote's history, running a downloaded script, writing outside the workspace. A hint for the prompt,
 * not a guard: the permission rules and the person decide.
 */

/** Words that run the command after them: `sudo rm -rf x` is still `rm -rf x`. */
const WRAPPERS = new Set(['sudo', 'env', 'nohup', 'exec', 'command', 'nice', 'time', 'xargs', '!', '{', 'if', 'then', 'else', 'elif', 'do', 'while', 'until']);
const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'fish']);
const DOWNLOADERS = new Set(['curl', 'wget']);
const WRITE_REDIRECTS = new Set(['>', '>>', '&>', '&>>', '>|', '<>']);
const HARMLESS_TARGETS = new Set(['/dev/null', '/dev/stdout', '/dev/stderr']);

function programWords(words: string[]): string[] {
  let first = 0;
  while (first < words.length - 1 && (WRAPPERS.has(words[first]) || /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[first]))) first++;
  return words.slice(first);
}

const nameOf = (word: string | undefined) => (word === undefined ? '' : path.basename(word));
const flags = (args: string[]) => args.filter((a) => a.startsWith('-'));
const operands = (args: string[]) => args.filter((a) => !a.startsWith('-'));

function isRecursiveForcedRm(args: string[]): boolean {
  const given = flags(args);
  const recursive = given.some((f) => f === '--recursive' || /^-[a-zA-Z]*[rR]/.test(f));
  const force = given.some((f) => f === '--force' || /^-[a-zA-Z]*f/.test(f));
  return recursive && force;
}

function isForcedPush(args: string[]): boolean {
  const push = args.indexOf('push');
  if (push < 0) return false;
  return args.slice(push + 1).some((a) => a === '-f' || a === '--force' || a.startsWith('--force-with-lease') || a === '--mirror' || (/^-[a-zA-Z]+$/.test(a) && a.includes('f')) || /^\+[^+]/.test(a));
}

/** Files a program writes by its arguments (the common ones), besides redirections. */
function writtenOperands(program: string, args: string[]): string[] {
  if (program === 'tee') return operands(args);
  if (program === 'cp' || program === 'mv' || program === 'install' || program === 'ln' || program === 'rsync' || program === 'scp') return operands(args).slice(-1);
  if (program === 'rm' || program === 'touch' || program === 'mkdir' || program === 'chmod' || program === 'chown') return operands(args).slice(program === 'chmod' || program === 'chown' ? 1 : 0);
  if (program === 'dd') return args.filter((a) => a.startsWith('of=')).map((a) => a.slice(3));
  return [];
}

function isOutside(target: string, cwd: string, roots: string[]): boolean {
  if (HARMLESS_TARGETS.has(target)) return false;
  if (target.startsWith('~')) return true;
  return path.isAbsolute(workspaceSubject(roots, path.resolve(cwd, target)));
}

/** Programs that change the shell's folder for what follows. */
const FOLDER_CHANGERS = new Set(['cd', 'pushd']);
/** The system's own folders: naming one (`/usr/bin/env`, `/dev/null`) is not a way into someone's files. */
const SYSTEM_FOLDERS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/dev', '/proc', '/sys', '/etc', '/opt', '/nix', '/snap'];

/**
 * Where a command leaves the workspace (or a conversation's worktree) by what it names: a `cd` / `pushd`
 * out of it (`cd ..` at its top, `cd` alone or `cd ~` to the home folder, `cd -`), a `../` path that
 * resolves outside, an absolute path outside (the person's working tree beside a worktree). A hint for
 * the prompt, not a fence: a shell reaches any path through a variable, a script or a program's option.
 */
function leavingWords(program: string, args: string[], cwd: string, roots: string[]): string[] {
  if (FOLDER_CHANGERS.has(program)) {
    const target = operands(args)[0];
    if (target === undefined || target === '-' || target.startsWith('~') || isOutside(target, cwd, roots)) return [`${program} ${target ?? ''}`.trim()];
    return [];
  }
  return operands(args).filter((word) => {
    const named = path.isAbsolute(word) || word.split('/').includes('..');
    if (!named || HARMLESS_TARGETS.has(word)) return false;
    const resolved = path.resolve(cwd, word);
    if (SYSTEM_FOLDERS.some((folder) => resolved === folder || resolved.startsWith(`${folder}/`))) return false;
    return isOutside(word, cwd, roots);
  });
}

/** The warnings for a command (a shell line or an argv) run in the absolute folder `cwd`. */
export function commandWarnings(command: string | string[], cwd: string, roots: string[]): string[] {
  const line = typeof command === 'string' ? parseShellLine(command) : undefined;
  const commands = line ? line.commands.map((c) => programWords(c.words)) : [programWords(command as string[])];
  const warnings = new Set<string>();
  const outside = (target: string) => {
    if (isOutside(target, cwd, roots)) warnings.add(`writes outside the workspace: ${target}`);
  };
  for (const [program, ...args] of commands.map((words) => [nameOf(words[0]), ...words.slice(1)])) {
    if (program === 'rm' && isRecursiveForcedRm(args)) warnings.add('rm -rf: deletes files and folders recursively, without asking');
    if (program === 'git' && isForcedPush(args)) warnings.add('git push --force: may overwrite commits on the remote');
    const written = writtenOperands(program, args);
    written.forEach(outside);
    for (const word of leavingWords(program, args, cwd, roots)) if (!written.includes(word)) warnings.add(`leaves the workspace: ${word}`);
  }
  const programs = commands.map((words) => nameOf(words[0]));
  if (programs.some((p) => DOWNLOADERS.has(p)) && programs.some((p) => SHELLS.has(p))) {
    warnings.add('curl | sh: runs a script fetched from the network');
  }
  if (line) {
    // The word after a redirection operator begins the next simple command in the shape: its first word is the file.
    let commandIndex = 0;
    line.shape.forEach((part, i) => {
      if (part === 'W') commandIndex++;
      else if (WRITE_REDIRECTS.has(part) && line.shape[i + 1] === 'W') {
        const target = line.commands[commandIndex]?.words[0];
        if (target !== undefined) outside(target);
      }
    });
  }
  return [...warnings];
}
