// Git LFS (issue 24, "What goes wrong"): the service's git runs no filter a repository names (run-git.ts),
// so a file that .gitattributes gives to LFS (`filter=lfs`) would be stored as its raw bytes where the
// repository keeps a small pointer, and every clone would then hold the large file in its history.
// Commit and land refuse such a file by name instead; a pointer file left as it is (the worktree checks
// LFS files out as their pointers) is fine.
import { ServiceError } from '../protocol/errors';
import { gitIn, nulFields, type ReviewGitOptions } from './git-in';

/** An LFS pointer file is at most this many bytes (the spec says under 1024). */
const MAX_POINTER_BYTES = 1024;
const POINTER = /^version https:\/\/git-lfs\.github\.com\/spec\/v1\noid sha256:[0-9a-f]{64}\nsize \d+\n/;

/**
 * Refuses (`conflict`, naming them) when any of `paths` is an LFS file whose blob at `revision` (`''`: the
 * index) is not a pointer. Attributes are read from the index git is given (`env`'s GIT_INDEX_FILE, else
 * `cwd`'s own), so a .gitattributes the change itself adds or edits counts.
 */
export async function refuseRawLfsFiles(cwd: string, revision: string, paths: readonly string[], env?: ReviewGitOptions['env'], what = 'commit'): Promise<void> {
  if (paths.length === 0) return;
  const attributes = nulFields((await gitIn(cwd, ['check-attr', '--cached', '-z', '--stdin', 'filter'], { env, input: paths.map((p) => `${p}\0`).join('') })).stdout);
  const lfs: string[] = [];
  for (let i = 0; i + 2 < attributes.length; i += 3) if (attributes[i + 2] === 'lfs') lfs.push(attributes[i]);
  if (lfs.length === 0) return;
  const raw = await notPointers(cwd, revision, lfs, env);
  if (raw.length === 0) return;
  const shown = raw.slice(0, 10).join(', ') + (raw.length > 10 ? ` and ${raw.length - 10} more` : '');
  throw new ServiceError(
    'conflict',
    `the repository keeps ${shown} in git LFS (filter=lfs in .gitattributes), whose filter the service does not run: a ${what} here would store the whole file instead of its LFS pointer. Nothing was ${what === 'commit' ? 'committed' : 'changed'}: ${what} it with git (git lfs installed) in ${cwd}.`,
  );
}

/** Of `paths`, those whose blob at `revision` is not an LFS pointer (sizes first: one git for all; content only of the small ones). */
async function notPointers(cwd: string, revision: string, paths: readonly string[], env?: ReviewGitOptions['env']): Promise<string[]> {
  const specs = paths.map((p) => `${revision}:${p}`);
  const checked = (await gitIn(cwd, ['cat-file', '--batch-check', '-z'], { env, input: specs.map((s) => `${s}\0`).join('') })).stdout.split('\n');
  const raw: string[] = [];
  for (const [i, file] of paths.entries()) {
    const blob = /^([0-9a-f]+) blob (\d+)$/.exec(checked[i] ?? '');
    // A path gone at that revision (`<spec> missing`) has nothing to store.
    if (!blob) continue;
    if (Number(blob[2]) > MAX_POINTER_BYTES) raw.push(file);
    else if (!POINTER.test((await gitIn(cwd, ['cat-file', 'blob', blob[1]], { env })).stdout)) raw.push(file);
  }
  return raw;
}
