import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';

/**
 * Finds the processes a command started even when they left its process group and session (`setsid`,
 * a daemon's double fork), so that they can be killed with it. Each run gets a random marker in an
 * environment variable; every descendant inherits it, and on Linux /proc/<pid>/environ shows it (for
 * our own user's processes). A process that clears its environment (`env -i`) before detaching is not
 * found: docs/protocol.md states that limit. Elsewhere (no /proc) only the process group is killed.
 */
export const RUN_MARKER_VARIABLE = 'REMOTE_ASSISTANT_RUN';

const HAS_PROC = process.platform === 'linux' && existsSync('/proc/self/environ');
/** Rounds of scan-and-kill: a process may fork between one scan and its kill. */
const ROUNDS = 3;

export function newRunMarker(): string {
  return randomBytes(12).toString('hex');
}

async function markedPids(entry: Buffer): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    try {
      if ((await readFile(`/proc/${name}/environ`)).includes(entry)) pids.push(pid);
    } catch {
      // Gone, or another user's process (EACCES): not ours to kill.
    }
  }
  return pids;
}

/** SIGKILLs every live process carrying `marker`; answers how many were killed. */
export async function killMarked(marker: string): Promise<number> {
  if (!HAS_PROC) return 0;
  const entry = Buffer.from(`${RUN_MARKER_VARIABLE}=${marker}\0`);
  let killed = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const pids = await markedPids(entry);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        killed++;
      } catch {
        // Already gone.
      }
    }
  }
  return killed;
}
