// The one home for running the real `git` program (docs/design.md, "Layers"): the environment block's
// status, the worktrees of issue 24 and their review all come through here, so what a repository's own
// config may make git run is decided once. A repository's config and hooks are its files (an unpacked
// archive, a clone, a webhook's turn writing .git/config through a shell): no command they name may run.
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CappedOutput } from './capped-output';
import { gitStarter } from './git-starter';
import { configFilesOf, settledSince, unchanged, type ConfigFiles } from './config-files';

/** How long a git command may take unless the caller says otherwise. */
export const GIT_DEFAULT_TIMEOUT_MS = 30_000;
/** Enough output for a status or diff of tens of thousands of files; more is cut (`overflowed`). */
export const GIT_DEFAULT_MAX_BYTES = 16 * 1024 * 1024;

export interface GitOptions {
  /** The folder git runs in (`-C`). */
  cwd: string;
  timeoutMs?: number;
  maxBytes?: number;
  /** Exit codes that are answers, not failures (`git config --get` answers 1 for "no such key"). */
  okCodes?: readonly number[];
  /** A read that must never write the index (a status while the user's own git runs): `--no-optional-locks`. */
  readOnly?: boolean;
  /** Output past maxBytes is returned cut (`overflowed`) instead of failing. */
  allowOverflow?: boolean;
  /**
   * With allowOverflow: a cut output ends just before the last `\n` + this text (a diff's `diff --git `:
   * only whole files are kept). Found in the bytes, before any is decoded: the same search over the
   * decoded 64 MiB held the service's loop for most of a second (docs/design.md, "Git's cost").
   */
  cutBefore?: string;
  /** stdout decoded one character a byte (`cat-file --batch`: contents whose sizes git gives in bytes); else UTF-8. */
  stdoutEncoding?: 'utf8' | 'latin1';
  /** Written to git's standard input (a patch, a commit message). */
  input?: string;
  /** More environment for this run (GIT_INDEX_FILE of a temporary index, a replayed commit's author). */
  env?: Record<string, string>;
  /** The repository's hooks run (service.json `worktrees.allow_hooks`: the owner allowed them for commit, land and push). */
  allowHooks?: boolean;
  /**
   * The command reads no file's content from a working tree (rev-parse, symbolic-ref, rev-list, `ls-files
   * --others`, a diff of two commits): no filter driver can run from it, so the config's filters are not
   * read first and it starts at once (one git process fewer on its way). Hooks and fsmonitor stay guarded.
   */
  readsNoContent?: boolean;
  /** Called once git has been started (a caller starts its lesser reads after its slow one, not before it). */
  onStart?: () => void;
}

export interface GitResult {
  stdout: string;
  stderr: string;
  code: number;
  /** stdout was cut at maxBytes (only with `allowOverflow`). */
  overflowed: boolean;
}

/** Why git gave no answer: not installed (or not on PATH), too slow, or it failed (`stderr` says why). */
export class GitError extends Error {
  constructor(
    readonly kind: 'missing' | 'timeout' | 'failed',
    message: string,
    readonly code: number | null = null,
    readonly stderr = '',
  ) {
    super(message);
    this.name = 'GitError';
  }
}

/**
 * Runs `git <args>` in `options.cwd`: an argument array (never a shell), a clean environment (no GIT_DIR,
 * GIT_WORK_TREE, GIT_CONFIG_* or any other GIT_ variable inherited from whoever started the service: they
 * would point git at another repository or add config), never a prompt for a password, messages in one
 * language, and nothing the repository's config or hooks name is run: hooks point at an empty folder,
 * core.fsmonitor is off, every filter driver the config in force defines is emptied and made optional
 * (an LFS repository's files are checked out as their pointer files), every merge driver it defines is
 * git's own text merge, and nothing is signed or has its signature verified (gpg.program and its ssh and
 * x509 kin would run). Diff drivers are the callers' to refuse (`--no-ext-diff --no-textconv`).
 */
export async function runGit(args: readonly string[], options: GitOptions): Promise<GitResult> {
  const guards = await guardArgs(options.cwd, options.timeoutMs, options.allowHooks === true, options.readsNoContent === true);
  return execGit([...(options.readOnly ? ['--no-optional-locks'] : []), ...guards, '-C', options.cwd, ...args], options);
}

/** runGit's answer's stdout, or a GitError when git failed. */
export async function gitOutput(args: readonly string[], options: GitOptions): Promise<string> {
  return (await runGit(args, options)).stdout;
}

/** The environment every git we run gets: the service's, without any GIT_ variable, plus ours. */
export function gitEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(env)) if (!/^GIT_/i.test(key)) clean[key] = value;
  return { ...clean, GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' };
}

let emptyHooks: Promise<string> | undefined;
/**
 * What core.hooksPath points at, so no hook of any repository runs. On POSIX, /dev/null: git looks for
 * `<path>/<hook>`, which can never exist under a device, and nothing is made (a folder made per process
 * was left in the temporary folder by every start). Windows has no such path: a folder of our own (0700,
 * empty), removed when the process exits.
 */
export function emptyHooksFolder(): Promise<string> {
  emptyHooks ??= process.platform === 'win32' ? ownEmptyFolder() : Promise.resolve('/dev/null');
  return emptyHooks;
}

async function ownEmptyFolder(): Promise<string> {
  const folder = await mkdtemp(path.join(tmpdir(), 'ra-no-hooks-'));
  process.once('exit', () => rmSync(folder, { recursive: true, force: true }));
  return folder;
}

/**
 * What a merge driver the config names becomes: git's own three-way text merge of the same files
 * (`%A` is written with the result; a conflict is a non-zero exit, as the driver's would be).
 */
const GIT_TEXT_MERGE = 'git merge-file --marker-size=%L %A %O %B';

/** Signing and verifying run gpg.program (or gpg.ssh.program, gpg.x509.program): none of them, ever. */
const NO_SIGNATURES = ['commit.gpgSign=false', 'tag.gpgSign=false', 'push.gpgSign=false', 'log.showSignature=false', 'merge.verifySignatures=false'];

/** `-c` settings that keep the repository's config from running anything (see runGit). */
async function guardArgs(cwd: string, timeoutMs: number | undefined, allowHooks: boolean, readsNoContent: boolean): Promise<string[]> {
  // A command that reads no file content neither filters nor merges: no driver can run from it.
  const { filters, mergeDrivers } = readsNoContent ? { filters: [], mergeDrivers: [] } : await driverNames(cwd, timeoutMs);
  return [
    ...(allowHooks ? [] : ['-c', `core.hooksPath=${await emptyHooksFolder()}`]),
    '-c',
    'core.fsmonitor=false',
    ...filters.flatMap((name) => ['clean', 'smudge', 'process'].flatMap((command) => ['-c', `filter.${name}.${command}=`]).concat('-c', `filter.${name}.required=false`)),
    ...mergeDrivers.flatMap((name) => ['-c', `merge.${name}.driver=${GIT_TEXT_MERGE}`]),
    ...NO_SIGNATURES.flatMap((setting) => ['-c', setting]),
  ];
}

interface DriverNames {
  /** `filter.<name>.*`: clean, smudge and process commands. */
  filters: string[];
  /** `merge.<name>.driver`: a command a `merge=<name>` attribute runs on a three-way merge (land's merge-tree, a rebase's apply --3way). */
  mergeDrivers: string[];
}

/**
 * The filter and merge drivers the config in force for `cwd` defines (reading config runs nothing;
 * included files are followed, as git follows them). A name that cannot be written as `-c` (it holds
 * `=`) makes the run refused: git would run that driver.
 */
function driverNames(cwd: string, timeoutMs?: number): Promise<DriverNames> {
  // A reading is kept while none of the files it depended on changed (config-files.ts): the config read
  // was one git process on the way of every get_changes.
  const kept = keptReadings.get(cwd);
  if (kept && unchanged(kept.files)) return Promise.resolve(kept.names);
  // Runs started together in one folder share one reading of the config: the same instant's answer,
  // one process instead of several.
  let reading = driverReadings.get(cwd);
  if (!reading) {
    reading = readDriverNames(cwd, timeoutMs).finally(() => driverReadings.delete(cwd));
    driverReadings.set(cwd, reading);
  }
  return reading;
}
const driverReadings = new Map<string, Promise<DriverNames>>();
/** The last reading of each folder's drivers, with the files it came from (at most KEPT_READINGS folders). */
const keptReadings = new Map<string, { names: DriverNames; files: ConfigFiles }>();
const KEPT_READINGS = 256;

/** Whether the next run in `cwd` takes its drivers from a kept reading, without reading the config (tests, the bench). */
export function keepsDriverReading(cwd: string): boolean {
  const kept = keptReadings.get(cwd);
  return kept !== undefined && unchanged(kept.files);
}

async function readDriverNames(cwd: string, timeoutMs?: number): Promise<DriverNames> {
  // The files are looked at before git reads them: a change after this look makes the next run read again.
  const started = Date.now();
  const before = configFilesOf(cwd, [], []);
  const { stdout } = await execGit(['-C', cwd, 'config', '-z', '--show-origin', '--get-regexp', '^filter\\.|^merge\\..*\\.driver$|^include\\.path$|^includeif\\..*\\.path$'], {
    cwd,
    timeoutMs,
    okCodes: [1],
  });
  const fields = stdout.split('\0');
  const keys: string[] = [];
  const origins: string[] = [];
  const includes: { path: string; from: string }[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const origin = fields[i].startsWith('file:') ? fields[i].slice('file:'.length) : undefined;
    if (!origin) throw new GitError('failed', `the repository config came from somewhere other than a file (${fields[i].split(':')[0]})`);
    const newline = fields[i + 1].indexOf('\n');
    const key = newline === -1 ? fields[i + 1] : fields[i + 1].slice(0, newline);
    origins.push(origin);
    if (/^include(if\..*)?\.path$/.test(key)) includes.push({ path: newline === -1 ? '' : fields[i + 1].slice(newline + 1), from: origin });
    else keys.push(key);
  }
  const namesOf = (section: string) => [...new Set(keys.filter((key) => key.startsWith(`${section}.`)).map((key) => key.slice(section.length + 1, key.lastIndexOf('.'))))];
  const names = { filters: namesOf('filter'), mergeDrivers: namesOf('merge') };
  if ([...names.filters, ...names.mergeDrivers].some((name) => name.includes('='))) throw new GitError('failed', 'the repository config names a filter or merge driver git cannot be told to skip');
  const files = before && configFilesOf(cwd, origins, includes);
  // Kept only when nothing git may have read changed while it read.
  if (files && before && settledSince(files, before, started)) {
    if (keptReadings.size >= KEPT_READINGS) keptReadings.delete(keptReadings.keys().next().value as string);
    keptReadings.set(cwd, { names, files });
  }
  return names;
}

function execGit(args: readonly string[], options: GitOptions): Promise<GitResult> {
  const maxBytes = options.maxBytes ?? GIT_DEFAULT_MAX_BYTES;
  return new Promise((resolve, reject) => {
    const stdout = new CappedOutput(maxBytes);
    const stderr = new CappedOutput(maxBytes);
    let stopped: 'timeout' | 'overflow' | undefined;
    const stop = (why: 'timeout' | 'overflow') => {
      stopped ??= why;
      run.kill();
    };
    let timer: NodeJS.Timeout | undefined;
    let closed = false;
    const run = gitStarter.start(
      { args, env: { ...gitEnvironment(), ...options.env }, input: options.input, maxBytes },
      {
        onStdout: (chunk) => stdout.add(chunk) || stop('overflow'),
        onStderr: (chunk) => stderr.add(chunk) || stop('overflow'),
        onClose: (exit, signal, failedToStart) => {
          closed = true;
          clearTimeout(timer);
          // Stopped by us: its answer is why we stopped it, whatever ended it (a starter that did not answer is replaced).
          if (stopped === 'timeout') return reject(new GitError('timeout', 'git took too long to answer'));
          if (failedToStart?.code === 'ENOENT') return reject(new GitError('missing', 'git is not installed (or not on the PATH the service was started with)'));
          if (failedToStart) return reject(new GitError('failed', `git could not be started: ${failedToStart.message}`));
          const errText = stderr.text();
          if (stopped === 'overflow') {
            if (!options.allowOverflow) return reject(new GitError('failed', `git answered more than ${maxBytes} bytes`));
            return resolve({ stdout: options.cutBefore === undefined ? stdout.text() : stdout.textBefore(options.cutBefore), stderr: errText, code: 0, overflowed: true });
          }
          if (signal) return reject(new GitError('timeout', 'git took too long to answer'));
          const out = stdout.text(options.stdoutEncoding);
          if (exit === 0) return resolve({ stdout: out, stderr: errText, code: 0, overflowed: false });
          if (exit !== null && options.okCodes?.includes(exit)) return resolve({ stdout: out, stderr: errText, code: exit, overflowed: false });
          reject(new GitError('failed', firstLine(errText) || `git exited with code ${exit}`, exit, errText));
        },
      },
    );
    // Counted from when git is started, not from when the process that starts it was (git-starter.ts).
    void run.ready.then(() => {
      if (!closed) timer = setTimeout(() => stop('timeout'), options.timeoutMs ?? GIT_DEFAULT_TIMEOUT_MS);
    });
    options.onStart?.();
  });
}

function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .map((line) => line.trim())
      .find((line) => line.length > 0) ?? ''
  );
}
