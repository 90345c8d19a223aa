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

/** Of `paths`, those whose blob at `revision` is not an LFS pointer: sizes first, then the content of the small ones, one git each for all of them. */
async function notPointers(cwd: string, revision: string, paths: readonly string[], env?: ReviewGitOptions['env']): Promise<string[]> {
  const checked = await blobsAt(cwd, revision, paths, env);
  const raw = new Set<string>();
  const small: { file: string; blob: string }[] = [];
  for (const file of paths) {
    const blob = /^([0-9a-f]+) blob (\d+)$/.exec(checked.get(file) ?? '');
    // A path gone at that revision (`<spec> missing`) has nothing to store; an empty file is stored
    // as it is (git-lfs makes no pointer of one, by its spec), so it is no raw LFS file either.
    if (!blob || blob[2] === '0') continue;
    if (Number(blob[2]) > MAX_POINTER_BYTES) raw.add(file);
    else small.push({ file, blob: blob[1] });
  }
  if (small.length > 0) {
    const contents = await blobContents(
      cwd,
      small.map((s) => s.blob),
      env,
    );
    for (const [i, { file }] of small.entries()) if (!POINTER.test(contents[i] ?? '')) raw.add(file);
  }
  return paths.filter((file) => raw.has(file));
}

/**
 * `git cat-file --batch-check -z`'s answer line for each of `paths` at `revision`. git echoes a path missing
 * there back as it was given, so one named with a newline would answer two lines and shift every later
 * answer (a raw file would be read as "missing" and pass): those are asked one at a time, and only an
 * answer that is wholly `<id> blob <size>` counts.
 */
async function blobsAt(cwd: string, revision: string, paths: readonly string[], env?: ReviewGitOptions['env']): Promise<Map<string, string>> {
  const ask = async (asked: readonly string[]) => (await gitIn(cwd, ['cat-file', '--batch-check', '-z'], { env, input: asked.map((p) => `${revision}:${p}\0`).join('') })).stdout;
  const answers = new Map<string, string>();
  const plain = paths.filter((p) => !p.includes('\n'));
  if (plain.length > 0) {
    const lines = (await ask(plain)).split('\n');
    for (const [i, file] of plain.entries()) answers.set(file, lines[i] ?? '');
  }
  for (const file of paths.filter((p) => p.includes('\n'))) {
    const answer = await ask([file]);
    answers.set(file, /^[0-9a-f]+ blob \d+\n$/.test(answer) ? answer.slice(0, -1) : '');
  }
  return answers;
}

/**
 * Blobs asked of one `git cat-file --batch`: each answer is at most a header (under 100 bytes) and
 * MAX_POINTER_BYTES, so a batch answers under 9 MiB, far below git-in's output cap (64 MiB: about 60,000
 * answers; a change of that many small LFS files failed on it).
 */
const BLOBS_PER_BATCH = 8_192;

/** The contents of `blobs` (each at most MAX_POINTER_BYTES), in their order: one git for each BLOBS_PER_BATCH of them. */
async function blobContents(cwd: string, blobs: readonly string[], env?: ReviewGitOptions['env']): Promise<string[]> {
  const contents: string[] = [];
  for (let from = 0; from < blobs.length; from += BLOBS_PER_BATCH) {
    const batch = blobs.slice(from, from + BLOBS_PER_BATCH);
    const answers = await batchContents(cwd, batch, env);
    // A batch answered short (it stopped reading): the rest are read as missing, never shifted.
    contents.push(...answers, ...Array<string>(batch.length - answers.length).fill(''));
  }
  return contents;
}

/**
 * The contents of `blobs` from one `git cat-file --batch`: each answer is `<id> blob <size>\n`, then
 * `size` bytes and a `\n`. Read one character a byte, so a blob that is not text cannot shift where the
 * next one starts.
 */
async function batchContents(cwd: string, blobs: readonly string[], env?: ReviewGitOptions['env']): Promise<string[]> {
  const out = (await gitIn(cwd, ['cat-file', '--batch'], { env, input: blobs.map((b) => `${b}\n`).join(''), stdoutEncoding: 'latin1' })).stdout;
  const contents: string[] = [];
  let at = 0;
  for (let i = 0; i < blobs.length; i += 1) {
    const headerEnd = out.indexOf('\n', at);
    const size = /^[0-9a-f]+ blob (\d+)$/.exec(out.slice(at, headerEnd === -1 ? undefined : headerEnd));
    if (headerEnd === -1 || !size) break;
    const start = headerEnd + 1;
    contents.push(out.slice(start, start + Number(size[1])));
    at = start + Number(size[1]) + 1;
  }
  return contents;
}
