/**
 * A real VS Code for the end-to-end suite: code-server (installed by install-code-server.mjs into
 * .vscode-test/), with our packaged .vsix installed into a fresh extensions folder, a fresh user data
 * folder, and HOME/TMPDIR pointing into the run's scratch folder. Everything it starts is one process
 * group, stopped (TERM, then KILL) by `stop()`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { buildSync } from 'esbuild';
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { installCodeServer } from './install-code-server.mjs';

export const ROOT = resolve(__dirname, '..', '..');
export const EXTENSION_ID = 'remote-assistant.remote-assistant';
export const VSIX = join(ROOT, 'remote-assistant.vsix');

/** A free port on 127.0.0.1 (the OS picks it; a tiny race with other programs is accepted). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): string {
  const result = spawnSync(command, args, { cwd: options.cwd, env: options.env, encoding: 'utf8', timeout: options.timeoutMs, stdio: ['ignore', 'pipe', 'pipe'] });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`}):\n${(result.stdout + result.stderr).slice(-3000)}`);
  return result.stdout;
}

/** `npm run package` (production build + vsce): the .vsix a user installs. Returns its size in bytes. */
export function packageVsix(): number {
  run('npm', ['run', 'package'], { cwd: ROOT, timeoutMs: 180_000 });
  return statSync(VSIX).size;
}

/**
 * Packages a test fixture extension (a folder with its package.json) into a .vsix in `outDir`; returns its
 * path. A fixture written in TypeScript (an extension.ts) is bundled first, as the real extension is
 * (esbuild, minified, `vscode` external), in a copy of its folder under `outDir`: the checkout stays clean.
 */
export function packageFixtureVsix(folder: string, outDir: string): string {
  const name = folder.split('/').pop()!;
  const out = join(outDir, `${name}.vsix`);
  let source = folder;
  if (existsSync(join(folder, 'extension.ts'))) {
    source = join(outDir, `${name}-package`);
    mkdirSync(source, { recursive: true });
    for (const file of readdirSync(folder).filter((f) => !f.endsWith('.ts'))) copyFileSync(join(folder, file), join(source, file));
    buildSync({
      entryPoints: [join(folder, 'extension.ts')],
      outfile: join(source, 'extension.js'),
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'cjs',
      minify: true,
      external: ['vscode'],
      logLevel: 'warning',
    });
  }
  run(join(ROOT, 'node_modules', '.bin', 'vsce'), ['package', '--no-dependencies', '--allow-missing-repository', '--skip-license', '-o', out], { cwd: source, timeoutMs: 120_000 });
  return out;
}

/** The code-server binary, installing it on first use (about a minute, cached in .vscode-test/). */
export function codeServerBinary(): string {
  return installCodeServer({ quiet: true });
}

export interface CodeServerOptions {
  /** Scratch folder of this run: user data, extensions, HOME and TMPDIR go below it. */
  scratch: string;
  /** The folder opened as the workspace. */
  workspace: string;
  /** Written to User/settings.json (beside the defaults that keep the workbench quiet). */
  settings: Record<string, unknown>;
  /** Files to pre-write into the extension's global storage (its data directory), e.g. service.json. */
  globalStorage?: Record<string, string>;
  /** Other extensions (.vsix paths) installed beside ours, e.g. a test fixture contributing tools. */
  otherExtensions?: string[];
}

export interface CodeServer {
  url: string;
  /** The workbench URL with the workspace folder open. */
  workbenchUrl: string;
  userDataDir: string;
  /** The extension's global storage: the service's data directory. */
  dataDir: string;
  /** Rewrites User/settings.json with `settings` over what it holds; VS Code picks the change up live. */
  updateSettings(settings: Record<string, unknown>): Promise<void>;
  /** code-server's output so far (for failure messages). */
  output(): string;
  stop(): Promise<void>;
}

/**
 * VS Code's remote extension host (code-server's, a remote-SSH's; never desktop VS Code's local one) looks for
 * ports to forward by forking `ls -l /proc/[0-9]*\/fd/[0-9]*` and `ps` from its own main thread every
 * max(2 s, 20x the scan's time) (ExtHostTunnelService's candidate finder, in extensionHostProcess.js): each
 * fork blocks the loop every extension shares (27-110 ms of `spawn` in a CPU profile under load). The
 * workbench asks the extension host to run the finder while `(remote.autoForwardPorts || a tunnel provider
 * is registered) && remote.autoForwardPortsSource !== 'output'`, and asks again at every change of either
 * setting (MainThreadTunnelService): both are set, so neither a tunnel provider nor a source keeps it on.
 * The finder's loop ends after its current sleep. The extension host's one scan at its start (its initial
 * candidates) runs whatever the settings say. See docs/design.md, "The e2e's streaming stall, attributed".
 */
export const PORT_FINDER_OFF = { 'remote.autoForwardPorts': false, 'remote.autoForwardPortsSource': 'output' };

const QUIET_SETTINGS = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'telemetry.telemetryLevel': 'off',
  'security.workspace.trust.enabled': false,
  'update.mode': 'none',
  'git.enabled': false,
  'chat.commandCenter.enabled': false,
};

export async function startCodeServer(options: CodeServerOptions): Promise<CodeServer> {
  const bin = codeServerBinary();
  const userDataDir = join(options.scratch, 'user-data');
  const extensionsDir = join(options.scratch, 'extensions');
  const home = join(options.scratch, 'home');
  const tmp = join(options.scratch, 'tmp');
  const dataDir = join(userDataDir, 'User', 'globalStorage', EXTENSION_ID);
  for (const dir of [userDataDir, extensionsDir, home, tmp, dataDir]) await mkdir(dir, { recursive: true });
  // RA_E2E_NO_PORT_SCAN=1 (diagnosis only): VS Code's own scan for ports to forward off from the start (see PORT_FINDER_OFF).
  const portScan = process.env.RA_E2E_NO_PORT_SCAN ? PORT_FINDER_OFF : {};
  const settingsFile = join(userDataDir, 'User', 'settings.json');
  let settings: Record<string, unknown> = { ...QUIET_SETTINGS, ...portScan, ...options.settings };
  await writeFile(settingsFile, JSON.stringify(settings, null, 2));
  for (const [name, content] of Object.entries(options.globalStorage ?? {})) await writeFile(join(dataDir, name), content, { mode: 0o600 });

  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TMPDIR: tmp, XDG_CONFIG_HOME: join(home, '.config'), XDG_DATA_HOME: join(home, '.local', 'share'), NODE_ENV: 'production' };
  delete env.NODE_OPTIONS; // the test runner's tsx loader must not reach the extension host
  const dirs = ['--user-data-dir', userDataDir, '--extensions-dir', extensionsDir];
  for (const vsix of [VSIX, ...(options.otherExtensions ?? [])]) run(bin, [...dirs, '--install-extension', vsix, '--force'], { cwd: tmp, env, timeoutMs: 120_000 });
  if (!existsSync(extensionsDir)) throw new Error('the .vsix did not install');

  const port = await freePort();
  const child: ChildProcess = spawn(
    bin,
    [
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--auth',
      'none',
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      '--ignore-last-opened',
      ...dirs,
      options.workspace,
    ],
    // Its own cwd: nothing it (or a tool the test runs) writes may land in the checkout.
    { cwd: tmp, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));

  // If this process dies before stop() (a runner timeout, Ctrl-C), the detached group must not outlive it.
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const onSignal = (signal: NodeJS.Signals) => {
    killGroup();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('exit', killGroup);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.off('exit', killGroup);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    const signal = (name: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, name); // the whole group: server, extension hosts, their children
      } catch {
        // already gone
      }
    };
    signal('SIGTERM');
    const inTime = await Promise.race([exited.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 5_000).unref())]);
    // Stragglers of the group (an extension host finishing) are killed either way.
    signal('SIGKILL');
    if (!inTime) await Promise.race([exited, new Promise((r) => setTimeout(r, 2_000).unref())]);
  };

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`code-server exited (${child.exitCode}):\n${output}`);
    const healthy = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (healthy) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`code-server did not answer /healthz in 30 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    workbenchUrl: `${url}/?folder=${encodeURIComponent(options.workspace)}`,
    userDataDir,
    dataDir,
    updateSettings: async (more) => {
      settings = { ...settings, ...more };
      await writeFile(settingsFile, JSON.stringify(settings, null, 2));
    },
    output: () => output,
    stop,
  };
}
