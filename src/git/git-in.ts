import { execFile } from 'node:child_process';
import { devNull } from 'node:os';
import { ServiceError } from '../protocol/errors';

/** git's environment here: never a prompt for a password or an editor, messages in one language. */
const GIT_ENV = { GIT_TERMINAL_PROMPT: '0', GIT_EDITOR: 'true', GIT_MERGE_AUTOEDIT: 'no', LC_ALL: 'C' };

/** Enough for the diff of thousands of changed files; a bigger one is cut by the caller (changes.ts). */
export const GIT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

export interface GitOptions {
  /** Written to git's standard input (a patch, a list of paths). */
  input?: string;
  /** More environment (GIT_INDEX_FILE of a temporary index). */
  env?: Record<string, string>;
  /** Exit codes that are answers, not failures (merge-tree's 1: conflicts). */
  okCodes?: readonly number[];
  timeoutMs?: number;
  maxBuffer?: number;
  /** Let the repository's hooks run (service.json `worktrees.allow_hooks`); off by default. */
  allowHooks?: boolean;
}

export interface GitOutput {
  stdout: string;
  stderr: string;
  code: number;
}

/** git failed: its exit code and its own message (never a shell's: git runs with an argument array). */
export class GitError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly code: number | string,
    readonly stderr: string,
  ) {
    super(`git ${args.find((arg) => !arg.startsWith('-') && !arg.includes('=')) ?? ''} failed (${code}): ${stderr.trim().split('\n').slice(-3).join(' ')}`);
    this.name = 'GitError';
  }
}

/**
 * Until the worktree runs' runner (s5/wtruns: src/git/run-git.ts, the one home for running git) is on
 * main, review runs git through this; then this becomes a thin call of that runner (its `input`, `env`
 * and `allowHooks` added there).
 *
 * Runs the real git in `cwd` with an argument array (never a shell), bounded in time and output.
 * A repository's hooks are its files, and a conversation's worktree is written by the model: no hook
 * runs unless the owner allowed them (`core.hooksPath` pointed at a path that holds none), pathspecs are
 * literal (a file named `*` is that file), and the fsmonitor the repository may name is not started.
 */
export function gitIn(cwd: string, args: readonly string[], options: GitOptions = {}): Promise<GitOutput> {
  const guards = ['--literal-pathspecs', '-c', 'core.fsmonitor=false', ...(options.allowHooks ? [] : ['-c', `core.hooksPath=${devNull}`])];
  const full = [...guards, '-C', cwd, ...args];
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      full,
      { env: { ...process.env, ...GIT_ENV, ...options.env }, timeout: options.timeoutMs ?? 60_000, maxBuffer: options.maxBuffer ?? GIT_MAX_OUTPUT_BYTES, windowsHide: true },
      (error, stdout, stderr) => {
        if (!error) return resolve({ stdout, stderr, code: 0 });
        const code = (error as { code?: unknown }).code;
        if (code === 'ENOENT') return reject(new ServiceError('server_error', 'git is not installed (or not on PATH): it is needed for worktrees and their review'));
        if (typeof code === 'number' && options.okCodes?.includes(code)) return resolve({ stdout, stderr, code });
        reject(new GitError(args, typeof code === 'number' || typeof code === 'string' ? code : 'killed', stderr));
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
    else child.stdin?.end();
  });
}

/** NUL-separated fields of a `-z` output. */
export function nulFields(stdout: string): string[] {
  const fields = stdout.split('\0');
  if (fields.at(-1) === '') fields.pop();
  return fields;
}
