#!/usr/bin/env node
// Installs code-server (a real VS Code in the browser) for the end-to-end suite into the git-ignored
// .vscode-test/ folder, never as a dependency of the extension. Idempotent: a finished install is
// marked and reused. Needs Debian's ripgrep and libkrb5-dev (.ci/run installs them).
//
//   node test/e2e/install-code-server.mjs      # prints the path of the code-server binary
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// 4.100.3 (VS Code 1.100.3) is the newest code-server that runs on node 20.
export const CODE_SERVER_VERSION = '4.100.3';
// What @vscode/ripgrep (as pinned by that code-server) downloads from GitHub; we hand it Debian's rg instead.
const RIPGREP_CACHE = 'vscode-ripgrep-cache-1.15.11';
const RIPGREP_ASSET = { x64: 'ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz', arm64: 'ripgrep-v13.0.0-10-aarch64-unknown-linux-musl.tar.gz' };

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const installDir = join(root, '.vscode-test', `code-server-${CODE_SERVER_VERSION}`);
export const codeServerBin = join(installDir, 'node_modules', '.bin', 'code-server');
const marker = join(installDir, '.installed');

function which(command) {
  const found = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : undefined;
}

const lockDir = join(dirname(installDir), `code-server-${CODE_SERVER_VERSION}.installing`);
const STALE_LOCK_MS = 10 * 60_000;

/** One installer at a time (two test runs in one checkout): the others wait for it, then reuse its install. */
function withInstallLock(run) {
  mkdirSync(dirname(lockDir), { recursive: true });
  const deadline = Date.now() + STALE_LOCK_MS;
  for (;;) {
    try {
      mkdirSync(lockDir);
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      const age = Date.now() - statSync(lockDir, { throwIfNoEntry: false })?.mtimeMs;
      if (age > STALE_LOCK_MS || Date.now() > deadline) rmSync(lockDir, { recursive: true, force: true });
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
    }
  }
  try {
    return run();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

export function installCodeServer({ quiet = false } = {}) {
  if (existsSync(marker) && existsSync(codeServerBin)) return codeServerBin;
  return withInstallLock(() => (existsSync(marker) && existsSync(codeServerBin) ? codeServerBin : install(quiet)));
}

function install(quiet) {
  const rg = which('rg');
  if (!rg) throw new Error('ripgrep (rg) is missing: apt-get install -y ripgrep');
  const asset = RIPGREP_ASSET[process.arch];
  if (!asset) throw new Error(`no ripgrep cache recipe for ${process.arch}`);

  rmSync(installDir, { recursive: true, force: true });
  mkdirSync(installDir, { recursive: true });
  // A private TMPDIR holding the ripgrep "download" (a tar.gz with the single file rg).
  const tmp = mkdtempSync(join(dirname(installDir), 'install-tmp-'));
  try {
    const cache = join(tmp, RIPGREP_CACHE);
    mkdirSync(cache, { recursive: true });
    const stage = join(tmp, 'rg-stage');
    mkdirSync(stage);
    copyFileSync(rg, join(stage, 'rg'));
    execFileSync('tar', ['-czf', join(cache, asset), '-C', stage, 'rg']);

    writeFileSync(join(installDir, 'package.json'), JSON.stringify({ name: 'e2e-code-server', private: true }, null, 2));
    const started = Date.now();
    if (!quiet) console.error(`installing code-server@${CODE_SERVER_VERSION} into ${installDir} (about a minute)...`);
    const result = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error', `code-server@${CODE_SERVER_VERSION}`], {
      cwd: installDir,
      stdio: quiet ? 'pipe' : ['ignore', 'inherit', 'inherit'],
      encoding: 'utf8',
      env: {
        ...process.env,
        TMPDIR: tmp,
        // node-pty runs `npx node-gyp`; code-server's postinstall refuses to run as root otherwise.
        npm_config_yes: 'true',
        npm_config_unsafe_perm: 'true',
      },
    });
    if (result.status !== 0) {
      throw new Error(`npm install code-server@${CODE_SERVER_VERSION} failed (exit ${result.status})${quiet ? `:\n${String(result.stderr).slice(-4000)}` : ''}`);
    }
    if (!existsSync(codeServerBin)) throw new Error(`code-server installed but ${codeServerBin} is missing`);
    writeFileSync(marker, new Date().toISOString());
    if (!quiet) console.error(`code-server installed in ${Math.round((Date.now() - started) / 1000)} s`);
    return codeServerBin;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    console.log(installCodeServer());
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
}
