import { copyFile, lstat, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { pidAlive } from '../platform/lock-file';
import { ServiceError } from '../protocol/errors';
import type { PushResult, WorktreeRecord } from '../protocol/worktrees';
import { requireFolder } from './changes';
import { compareUrlOf } from './compare-url';
import { nulFields, gitIn } from './git-in';
import { emptyHooksFolder, GitError, runGit } from './run-git';

/**
 * The program a push starts at the other end (run by a shell here for a local or ssh remote): git's own,
 * whatever `remote.<name>.receivepack` the repository's config names; and no `ext::` URL (a command line)
 * even where the config allows the protocol.
 */
const RECEIVE_PACK = 'git-receive-pack';

/** How long one git push may take (a slow network, a big first push). */
const PUSH_TIMEOUT_MS = 120_000;

/**
 * The receive-pack a push to a remote on this machine (a path, a file:// URL) starts: git's own, kept
 * from running what the remote repository's files name. That repository is files the agent or a clone
 * may have written (a bare repository in the worktree, a remote URL the repository's config points
 * anywhere), and git clears our `-c` settings for a local receive-pack: so they are given on its own
 * command line. Its hooks (in hooks/ or where its core.hooksPath says) point at our empty folder; its
 * core.alternateRefsCommand lists nothing (only an alternate's refs not advertised: more objects sent);
 * and its checked-out branch is never updated in place (receive.denyCurrentBranch=updateInstead would
 * check files out there, running its filters, fsmonitor and push-to-checkout hook): refused, as git's default.
 */
async function localReceivePack(): Promise<string> {
  const settings = [`core.hooksPath=${await emptyHooksFolder()}`, 'core.alternateRefsCommand=true', 'core.fsmonitor=false', 'receive.denyCurrentBranch=refuse'];
  // Run by a shell: each setting single-quoted (the temp folder's path is the only part not ours).
  return ['git', ...settings.flatMap((setting) => ['-c', `'${setting.replace(/'/g, "'\\''")}'`]), 'receive-pack'].join(' ');
}

/**
 * Whether git reaches `url` by starting a receive-pack on this machine, decided as git's transport.c and
 * connect.c decide: not a remote helper (`<scheme>::`), and either a file:// URL or neither a URL
 * (`<scheme>://`) nor scp-like `host:path` (a `:` before any `/`). On Windows git reads a drive letter as a path
 * (`C:/x`, `C:\x`, `c:x`) and a backslash as a slash; a share (`\\server\share`) has no `:` and is a path. `file://` is
 * matched in any case: a file system that ignores case may find a helper for `FILE://`, and reading a
 * URL as local only gives it the hook-free receive-pack. The URLs come from `git remote get-url --push
 * --all`, which has applied the config's insteadOf and pushInsteadOf rewrites already.
 */
export function isLocalRemote(url: string, platform: NodeJS.Platform = process.platform): boolean {
  if (/^[A-Za-z0-9][A-Za-z0-9+.-]*::/.test(url)) return false;
  if (/^file:\/\//i.test(url)) return true;
  if (platform === 'win32' && /^[A-Za-z]:/.test(url)) return true;
  if (/^[A-Za-z0-9][A-Za-z0-9+.-]*:\/\//.test(url)) return false;
  const colon = url.indexOf(':');
  const slash = url.search(platform === 'win32' ? /[/\\]/ : /\//);
  return colon < 0 || (slash >= 0 && slash < colon);
}

/**
 * push_changes: the conversation's branch pushed to `remote` (its own name there), and the page that
 * opens a pull or merge request for it where the remote's host is one we know. The remote name is
 * checked against the repository's remotes first, so it can never be read as an option or a URL.
 */
export async function pushChanges(worktree: WorktreeRecord, remote: string, options: { allowHooks: boolean }): Promise<PushResult> {
  await requireFolder(worktree);
  // A name is the repository config's to choose, and `git remote` lists one that reads as an option
  // (`--receive-pack=<command>` would be run by the push): refused, and every name follows `--`.
  if (remote.startsWith('-')) throw new ServiceError('invalid_request', `a remote named ${remote} would be read by git as an option: rename it to push there`);
  // Read where the push runs: a config that depends on who reads it (includeIf onbranch/gitdir, the
  // worktree's own config) may name other remotes or URLs there than in the repository's checkout.
  const remotes = (await gitIn(worktree.path, ['remote'])).stdout.split('\n').filter(Boolean);
  if (!remotes.includes(remote)) {
    throw new ServiceError('invalid_request', remotes.length > 0 ? `the repository has no remote named ${remote} (it has ${remotes.join(', ')})` : 'the repository has no remote to push to');
  }
  // Every push URL (a remote may have several, and push goes to each), as git rewrites them (pushInsteadOf).
  const urls = (await gitIn(worktree.path, ['remote', 'get-url', '--push', '--all', '--', remote])).stdout.split('\n').filter(Boolean);
  const local = urls.filter((url) => isLocalRemote(url));
  if (!options.allowHooks && local.length > 0 && local.length < urls.length) {
    throw new ServiceError('conflict', `the remote ${remote} has push URLs both on this machine and elsewhere: nothing was pushed. Push from a terminal, or set worktrees.allow_hooks`);
  }
  const receivePack = !options.allowHooks && local.length > 0 ? await localReceivePack() : RECEIVE_PACK;
  // The owner's allow_hooks lets the repository's own programs run on push: its hooks, and these.
  const { named: commands, checked } = options.allowHooks ? { named: [], checked: [] } : await repositoryTransportCommands(worktree.path);
  if (commands.length > 0) {
    throw new ServiceError(
      'conflict',
      `the repository's own config names a command git would run to push, or where it would send your credentials (${commands.join(', ')}): nothing was pushed. Move it to your global config, set worktrees.allow_hooks, or push from a terminal`,
    );
  }
  const branch = `refs/heads/${worktree.branch}`;
  const pushArgs = (to: string, refspec: string) => ['-c', 'protocol.ext.allow=never', 'push', '--porcelain', '--recurse-submodules=no', `--receive-pack=${receivePack}`, '--', to, refspec];
  // The owner's allow_hooks trusts the repository's config: by the remote's name, as in a terminal
  // (its hooks are told the name; git pushes to every URL and updates the remote-tracking branch).
  try {
    if (options.allowHooks) await gitIn(worktree.path, pushArgs(remote, `${branch}:${branch}`), { allowHooks: true, timeoutMs: PUSH_TIMEOUT_MS });
    else await pushToEach(worktree, remote, urls, pushArgs, checked);
  } catch (error) {
    if (!(error instanceof GitError)) throw error;
    throw new ServiceError('conflict', `git could not push ${worktree.branch} to ${remote}: ${failureOf(error)}`);
  }
  return { remote, branch: worktree.branch, compare_url: compareUrlOf(urls[0] ?? '', worktree.branch, worktree.baseBranch) };
}

/**
 * The push without allow_hooks: to each checked URL, from a repository of ours that reads none of the
 * repository's config (withPushRepository). As git does, a URL that fails does not stop the push to the
 * others, and the remote-tracking branch follows a push that reached one.
 */
async function pushToEach(worktree: WorktreeRecord, remote: string, urls: readonly string[], pushArgs: (to: string, refspec: string) => string[], checked: [string, string][]): Promise<void> {
  const branch = `refs/heads/${worktree.branch}`;
  const tip = (await gitIn(worktree.path, ['rev-parse', '--verify', '--end-of-options', `${branch}^{commit}`])).stdout.trim();
  const commonDir = (await gitIn(worktree.path, ['rev-parse', '--path-format=absolute', '--git-common-dir'])).stdout.trim();
  const failures: string[] = [];
  for (const url of urls) {
    // A relative path is the repository's (git reads it from where it runs): made whole for ours.
    const to = isLocalRemote(url) && !/^file:/i.test(url) ? path.resolve(worktree.path, url) : url;
    try {
      await withPushRepository(commonDir, to, async (from, env) => {
        // http.* settings reach only an http(s) URL; git refuses a URL-matched key of any other form.
        const http = /^https?:\/\//i.test(to) ? await httpSettingsFor(from, to, env) : undefined;
        await runGit(pushArgs(to, `${tip}:${branch}`), { cwd: from, timeoutMs: PUSH_TIMEOUT_MS, env: { ...env, ...commandLineConfig(pinnedTransport(checked, http, to)) } });
      });
    } catch (error) {
      if (!(error instanceof GitError)) throw error;
      failures.push(urls.length > 1 ? `${redactUrls(url)}: ${failureOf(error)}` : failureOf(error));
    }
  }
  // As git, a remote-tracking branch that cannot be written (its ref locked) does not fail the push made.
  if (failures.length < urls.length) await updateTrackingBranch(worktree.path, commonDir, remote, branch, tip).catch(() => undefined);
  if (failures.length > 0) {
    const some = urls.length > 1 ? ` (pushed to ${urls.length - failures.length} of ${urls.length} push URLs)` : '';
    throw new ServiceError('conflict', `git could not push ${worktree.branch} to ${remote}${some}: ${failures.join('; ')}`);
  }
}

/** Why a push failed, from git's last words (URLs without their credentials), else how it ended. */
function failureOf(error: GitError): string {
  const reason = error.stderr
    .trim()
    .split('\n')
    .filter((line) => !line.startsWith('To ') && !line.startsWith('hint:'))
    .slice(-2)
    .join(' ');
  return redactUrls(reason) || (error.kind === 'timeout' ? error.message : `exit ${error.code}`);
}

/**
 * What git does after a push (transport.c's update_tracking_ref): the pushed branch's remote-tracking
 * branch, found by the remote's fetch refspecs (the first that matches; none where a negative one does),
 * is set to the pushed commit. Only under refs/remotes/: the refspecs are the repository's config, which
 * a turn may write (`refs/heads/<ours>:refs/heads/main` would move the person's own branch). git checks
 * the name; the repository's reference-transaction hook does not run (run-git.ts).
 */
async function updateTrackingBranch(folder: string, commonDir: string, remote: string, branch: string, tip: string): Promise<void> {
  const { stdout } = await gitIn(folder, ['config', '--get-all', '--', `remote.${remote}.fetch`], { okCodes: [1], readsNoContent: true });
  const tracking = trackingRefOf(stdout.split('\n').filter(Boolean), branch);
  if (!tracking?.startsWith('refs/remotes/') || !(await noSymlinkOnTheWay(commonDir, path.posix.dirname(tracking)))) return;
  // --no-deref: a remote-tracking ref made symbolic (`ref: refs/heads/main`) or a symlink is replaced, not followed.
  await gitIn(folder, ['update-ref', '--no-deref', '-m', 'update by push', tracking, tip], { readsNoContent: true });
}

/**
 * Whether every folder of `refs/...` on the way to a ref is a real folder (or not there yet): the files
 * backend writes `<folder>/<name>.lock` through the operating system, which follows a symlinked folder
 * (`refs/remotes/evil -> ../heads` makes `refs/remotes/evil/main` the person's main), --no-deref or not.
 */
async function noSymlinkOnTheWay(commonDir: string, refFolder: string): Promise<boolean> {
  let at = commonDir;
  for (const part of refFolder.split('/')) {
    at = path.join(at, part);
    const stat = await lstat(at).catch(() => undefined);
    if (stat === undefined) return true;
    if (!stat.isDirectory()) return false;
  }
  return true;
}

/** Where fetch refspecs (`[+]<src>:<dst>`, one `*` each side at most, `^<src>` excluding) map `ref`, as git's query_refspecs. */
export function trackingRefOf(refspecs: readonly string[], ref: string): string | undefined {
  const mapped = (pattern: string, to: string | undefined): string | undefined => {
    const star = pattern.indexOf('*');
    if (star < 0) return pattern === ref ? (to ?? ref) : undefined;
    const [prefix, suffix] = [pattern.slice(0, star), pattern.slice(star + 1)];
    if (!ref.startsWith(prefix) || !ref.endsWith(suffix) || ref.length < prefix.length + suffix.length) return undefined;
    return (to ?? ref).replace('*', ref.slice(prefix.length, ref.length - suffix.length));
  };
  if (refspecs.some((spec) => spec.startsWith('^') && mapped(spec.slice(1), undefined) !== undefined)) return undefined;
  for (const spec of refspecs) {
    if (spec.startsWith('^')) continue;
    const [src, dst] = spec.replace(/^\+/, '').split(':', 2);
    if (!dst || src.includes('*') !== dst.includes('*')) continue;
    const tracking = mapped(src, dst);
    if (tracking !== undefined) return tracking;
  }
  return undefined;
}

/**
 * Runs `work` in a bare repository of ours (made in a temporary folder, removed after) that borrows the
 * repository's objects (objects/info/alternates, and its shallow list) and has no config of its own: a
 * push from it reads none of the repository's config, which a turn may write between the check and the
 * push (a `remote.<the URL>.*` git looks up by the URL pushed to, a proxy, a helper, an include). git's
 * global config is replaced by a file of ours that pins `url` against rewriting (a `url.*.insteadOf` of
 * the person's would have been applied when the URL was read; ours matches the whole URL, and git takes
 * the longest rule) and then includes the person's own global files, as git reads them.
 */
async function withPushRepository<T>(commonDir: string, url: string, work: (repository: string, env: Record<string, string>) => Promise<T>): Promise<T> {
  await removeLeftoverPushFolders();
  const folder = await mkdtemp(path.join(tmpdir(), `${PUSH_FOLDER}${process.pid}-`));
  const file = path.join(folder, 'config');
  const repository = path.join(folder, 'repository.git');
  const text = [
    `[url ${quoted(url)}]`,
    `\tinsteadOf = ${quoted(url)}`,
    `\tpushInsteadOf = ${quoted(url)}`,
    '[include]',
    ...personalConfigFiles().map((file) => `\tpath = ${quoted(file)}`),
    // core.gitProxy: the first entry for the host wins (not the last), so no command-line setting can
    // override one written after the check; this one, after every checked file, stops git there.
    '[core]',
    '\tgitProxy = none',
  ].join('\n');
  try {
    await writeFile(file, `${text}\n`, { mode: 0o600 });
    const env = { GIT_CONFIG_GLOBAL: file };
    await runGit(['init', '-q', '--bare', '--template=', repository], { cwd: folder, env, readsNoContent: true });
    await mkdir(path.join(repository, 'objects', 'info'), { recursive: true });
    await writeFile(path.join(repository, 'objects', 'info', 'alternates'), `${path.join(commonDir, 'objects')}\n`);
    await copyFile(path.join(commonDir, 'shallow'), path.join(repository, 'shallow')).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
    return await work(repository, env);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** The start of a push repository's temporary folder's name: `ra-push-<pid of the process pushing>-<random>`. */
const PUSH_FOLDER = 'ra-push-';
/** No push's folder lives this long (its git runs are bounded: 30 s each, the push PUSH_TIMEOUT_MS). */
const PUSH_FOLDER_LIFETIME_MS = 10 * 60_000;

/**
 * Removes the push folders a process killed mid-push (kill -9, a crash) left: their config holds the URL
 * pushed to (a token in it). One is left when its process is gone, or when it is older than any push
 * lasts (a pid used again, a name without one); only this user's folders, never this process's own.
 */
async function removeLeftoverPushFolders(): Promise<void> {
  const names = await readdir(tmpdir()).catch(() => [] as string[]);
  await Promise.all(
    names
      .filter((name) => name.startsWith(PUSH_FOLDER))
      .map(async (name) => {
        const folder = path.join(tmpdir(), name);
        const pid = Number(/^ra-push-(\d+)-/.exec(name)?.[1] ?? 0);
        if (pid === process.pid) return;
        const info = await lstat(folder).catch(() => undefined);
        if (!info?.isDirectory() || (process.getuid && info.uid !== process.getuid())) return;
        if ((pid > 0 && !pidAlive(pid)) || Date.now() - info.mtimeMs > PUSH_FOLDER_LIFETIME_MS) await rm(folder, { recursive: true, force: true }).catch(() => undefined);
      }),
  );
}

/**
 * The person's own global config files, as git finds them: XDG_CONFIG_HOME's (or ~/.config's) git/config, then
 * ~/.gitconfig. Home is HOME where set (git's own choice on every platform), else the operating system's
 * (git for Windows falls back to the user's profile folder when HOME is unset, as os.homedir() does).
 */
export function personalConfigFiles(env: NodeJS.ProcessEnv = process.env): string[] {
  const home = env.HOME || homedir();
  const xdg = env.XDG_CONFIG_HOME || path.join(home, '.config');
  return [path.join(xdg, 'git', 'config'), path.join(home, '.gitconfig')];
}

/** A config file's quoted string (a subsection or a value): `"` and `\` escaped. */
function quoted(text: string): string {
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/**
 * Settings that name a program a push may run to reach the remote or ask for its credentials, and those
 * that send the credential (the person's, from their own helper) to a server git does not check: a
 * proxy, another address for the host, certificate checks off or a CA of the repository's choosing.
 */
const TRANSPORT_KEYS = '^(core\\.(sshcommand|gitproxy|askpass)|credential\\..*helper|http\\.(.*\\.)?(sslverify|sslcainfo|sslcapath|sslbackend|proxy|curloptresolve)|remote\\..*\\.proxy)$';
/**
 * A credential helper given by a plain name (`store`, `cache --timeout=60`): git runs its own
 * `git credential-<name>`, found on PATH. Anything else (`!<shell>`, a path, a shell character) runs
 * what it says; and any other argument may name a place (`store --file=<a file in the worktree>`,
 * `cache --socket=<path>`) where git hands the person's credential, got from their own helper, after
 * the push.
 */
const PLAIN_HELPER = /^(?:[A-Za-z0-9][\w.-]*(?: --timeout=\d+)?)?$/;

/**
 * The transport commands the repository's own config (its local and worktree files, and the files they
 * include) names: an ssh program, a git:// proxy, a password prompt, a credential helper that is not a
 * plain name; and the settings that would send the credential elsewhere (TRANSPORT_KEYS). That config
 * is the repository's files (a clone, a webhook's turn writing .git/config), and none of what it names
 * may run (run-git.ts); the user's global and system config are theirs, and run as in a terminal.
 */
async function repositoryTransportCommands(folder: string): Promise<{ named: string[]; checked: [string, string][] }> {
  const { stdout } = await gitIn(folder, ['config', '--show-scope', '--includes', '--null', '--get-regexp', TRANSPORT_KEYS], { okCodes: [1], readsNoContent: true });
  const named = new Set<string>();
  const checked: [string, string][] = [];
  for (const { scope, key, value } of configEntries(stdout)) {
    checked.push([key, value]);
    const harmless = /\.helper$/i.test(key) ? PLAIN_HELPER.test(value) : /\.sslverify$/i.test(key) && /^(true|yes|on|1)$/i.test(value);
    if ((scope === 'local' || scope === 'worktree') && !harmless) named.add(key);
  }
  return { named: [...named], checked };
}

/**
 * `git config --show-scope --null` entries: `<scope>\0<key>\n<value>\0`, or `<scope>\0<key>\0` for a key
 * written with no value, which git reads as true (`[http] sslVerify` alone): so it is here.
 */
export function configEntries(stdout: string): { scope: string; key: string; value: string }[] {
  const fields = nulFields(stdout);
  const entries: { scope: string; key: string; value: string }[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const newline = fields[i + 1].indexOf('\n');
    entries.push(newline < 0 ? { scope: fields[i], key: fields[i + 1], value: 'true' } : { scope: fields[i], key: fields[i + 1].slice(0, newline), value: fields[i + 1].slice(newline + 1) });
  }
  return entries;
}

/**
 * Settings, given on the push's command line (read after every file), that keep it to the transport just
 * checked (`checked`: every TRANSPORT_KEYS entry then, in git's order): a repository config written after
 * the check (a turn's shell) names nothing git uses. Each single value is the checked one, or what git
 * uses when none is set: `ssh` (the service's git has no GIT_SSH or GIT_SSH_COMMAND), SSH_ASKPASS or no
 * prompt, certificates checked, the proxy of the environment git reads (none when unset). The http keys
 * are given for the pushed URL itself: git takes the most specific URL's value (the last among equals),
 * and no key is more specific than the whole URL. Lists (credential helpers, curloptResolve) are emptied
 * (an empty value does that), then given the checked entries again. core.gitProxy is withUrlPinned's.
 * Not pinned when unset (no value says "git's default"): http.sslCAInfo, sslCAPath, sslBackend.
 */
export function pinnedTransport(checked: readonly [string, string][], http: ReadonlyMap<string, string> | undefined, url: string, env: NodeJS.ProcessEnv = process.env): [string, string][] {
  const lastOf = (pattern: RegExp) => checked.filter(([key]) => pattern.test(key)).at(-1)?.[1];
  const forUrl = (name: string) => http?.get(name.toLowerCase());
  const pinned = (name: string) => `http.${url}.${name}`;
  const pins: [string, string][] = [
    ['core.sshCommand', lastOf(/^core\.sshcommand$/i) ?? 'ssh'],
    ['core.askPass', lastOf(/^core\.askpass$/i) ?? env.SSH_ASKPASS ?? ''],
    ['credential.helper', ''],
    ...checked.filter(([key]) => /^credential\..*helper$/i.test(key)),
  ];
  if (!http) return pins;
  pins.push(
    [pinned('proxy'), forUrl('proxy') ?? environmentProxy(url, env) ?? ''],
    [pinned('sslVerify'), forUrl('sslVerify') ?? 'true'],
    // Each entry names its own host and port: those meant for other URLs change nothing here.
    [pinned('curloptResolve'), ''],
    ...checked.filter(([key]) => /^http\.(.*\.)?curloptresolve$/i.test(key)).map(([, value]): [string, string] => [pinned('curloptResolve'), value]),
  );
  for (const name of ['sslCAInfo', 'sslCAPath', 'sslBackend']) {
    const value = forUrl(name);
    if (value !== undefined) pins.push([pinned(name), value]);
  }
  return pins;
}

/**
 * The http.* settings in force for `url` (git's own URL matching: the most specific wins), by lowercase
 * name: read in our push repository (withPushRepository), so the person's and the system's only.
 */
async function httpSettingsFor(repository: string, url: string, env: Record<string, string>): Promise<Map<string, string>> {
  const { stdout } = await runGit(['config', '--show-scope', '--includes', '--null', '--get-urlmatch', 'http', url], { cwd: repository, okCodes: [1], readsNoContent: true, env });
  return new Map(configEntries(stdout).map(({ key, value }) => [key.toLowerCase().replace(/^http\./, ''), value]));
}

/** The proxy git's http.c takes from the environment when its config names none (lowercase first, as curl). */
function environmentProxy(url: string, env: NodeJS.ProcessEnv): string | undefined {
  const scheme = /^https:/i.test(url) ? env.https_proxy || env.HTTPS_PROXY : env.http_proxy;
  return scheme || env.all_proxy || env.ALL_PROXY || undefined;
}

/** Settings as git's command-line config, by environment (GIT_CONFIG_COUNT): a key or value may hold `=`. */
function commandLineConfig(settings: readonly [string, string][]): Record<string, string> {
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(settings.length) };
  settings.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

/** What discarding would lose: commits not in the base branch and files changed but not committed. */
export async function unlandedWork(worktree: WorktreeRecord): Promise<{ commits: number; uncommittedFiles: number }> {
  const base = worktree.baseBranch ? `refs/heads/${worktree.baseBranch}` : worktree.baseCommit;
  const tip = `refs/heads/${worktree.branch}`;
  const commits = await gitIn(worktree.repository, ['rev-list', '--count', `${base}..${tip}`]).then(
    (out) => Number(out.stdout.trim()),
    () => 0,
  );
  // A submodule counts when its commit moved; its files are not looked into (git would run `git status`
  // in it, under its own config: its filters).
  const uncommittedFiles = await gitIn(worktree.path, ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--ignore-submodules=dirty'], { readOnly: true }).then(
    (out) => nulFields(out.stdout).filter((field) => /^.. /.test(field)).length,
    () => 0,
  );
  return { commits, uncommittedFiles };
}

/** discard_changes: the worktree's folder and its branch removed (git's own bookkeeping of both too). */
export async function discardWorktree(worktree: WorktreeRecord): Promise<void> {
  await gitIn(worktree.repository, ['worktree', 'remove', '--force', '--force', worktree.path]).catch(async (error: unknown) => {
    // A folder deleted outside the service: git forgets it on prune.
    if (!(error instanceof GitError)) throw error;
    await gitIn(worktree.repository, ['worktree', 'prune']);
  });
  await gitIn(worktree.repository, ['branch', '-D', worktree.branch], { okCodes: [1] });
}

/**
 * A remote's error may quote its URL with a token in it. A scheme is matched from its first letter only
 * (a lookbehind): tried from every letter of a long word, it scanned the rest of the word each time,
 * quadratically (git's stderr carries the remote server's own lines).
 */
export function redactUrls(text: string): string {
  return text.replace(/(?<![a-z+])([a-z+]+:\/\/)[^/@\s]+@/gi, '$1');
}
