import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { waitFor } from './temp';

/**
 * A `git` placed first on a child service's PATH that stops the service's git at a chosen step, so a test
 * can kill -9 the service there, deterministically (no sleep race): while armed, each git the service runs
 * is logged (reading config for the filter guard is not counted), and at the N-th one the stopper says so
 * (`stopped` file) and waits to be killed:
 * - `before`: the step never ran;
 * - `after`: git ran it whole (its answer never reached the service);
 * - `during`: a git killed in the middle of it: its lock file (index.lock of the folder it ran in) is left.
 * The real git is run by its absolute path.
 */
export class GitStopper {
  private constructor(
    readonly dir: string,
    private readonly realGit: string,
  ) {}

  static async create(dir: string): Promise<GitStopper> {
    const realGit = execFileSync('sh', ['-c', 'command -v git']).toString().trim();
    const bin = join(dir, 'bin');
    await mkdir(bin, { recursive: true });
    const script = `#!/bin/sh
ctl='${dir}'
case "$*" in *"config -z --show-origin --get-regexp"*) exec '${realGit}' "$@";; esac
[ -f "$ctl/armed" ] || exec '${realGit}' "$@"
echo "$*" >> "$ctl/log"
n=$(wc -l < "$ctl/log")
read stop mode < "$ctl/armed"
[ "$n" = "$stop" ] || exec '${realGit}' "$@"
if [ "$mode" = after ]; then '${realGit}' "$@" > /dev/null 2>&1; fi
if [ "$mode" = during ]; then
  prev=; for a in "$@"; do [ "$prev" = -C ] && cwd=$a; prev=$a; done
  : > "$('${realGit}' -C "$cwd" rev-parse --path-format=absolute --git-path index.lock)"
fi
echo $$ > "$ctl/stopped.tmp" && mv "$ctl/stopped.tmp" "$ctl/stopped"
exec sleep 600
`;
    await writeFile(join(bin, 'git'), script);
    await chmod(join(bin, 'git'), 0o755);
    return new GitStopper(dir, realGit);
  }

  /** The PATH for the child service: this git first. */
  get path(): string {
    return `${join(this.dir, 'bin')}:${process.env.PATH ?? ''}`;
  }

  /** Counts from here; stops at the `step`-th git (Infinity: only logs). */
  async arm(step: number, mode: 'before' | 'after' | 'during'): Promise<void> {
    await rm(join(this.dir, 'log'), { force: true });
    await rm(join(this.dir, 'stopped'), { force: true });
    await writeFile(join(this.dir, 'armed'), `${Number.isFinite(step) ? step : 0} ${mode}\n`);
  }

  /** Every git logged since arm (its arguments). */
  async log(): Promise<string[]> {
    return existsSync(join(this.dir, 'log')) ? (await readFile(join(this.dir, 'log'), 'utf8')).split('\n').filter(Boolean) : [];
  }

  /** Waits until the armed step is reached; answers the waiting stopper's pid. */
  async stopped(): Promise<number> {
    await waitFor(() => existsSync(join(this.dir, 'stopped')), "the service's git to reach the armed step", 30_000);
    return Number((await readFile(join(this.dir, 'stopped'), 'utf8')).trim());
  }

  /** Stops counting, and ends the waiting stopper (the killed service's child) when given its pid. */
  async release(pid?: number): Promise<void> {
    await rm(join(this.dir, 'armed'), { force: true });
    // (Never 0 or below: kill would reach this whole process group.)
    if (pid === undefined || pid <= 0) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  }

  /** The real git, for the test's own look at the repositories. */
  get real(): string {
    return this.realGit;
  }
}
