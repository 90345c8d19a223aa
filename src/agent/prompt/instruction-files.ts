import { createHmac, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { packedMap } from '../../platform/packed-map';
import { openForReading } from '../tools/anchored-fs';
import { decodeText, formatBytes, prefixWithin } from '../tools/text-files';
import { placeInRoots, resolveWorkspacePath } from '../tools/workspace';
import { nextCheckPhase, PlacesWatch } from './places-watch';

/** All instruction files together give the model at most this much text; the rest is cut, with a note. */
export const INSTRUCTIONS_BUDGET_BYTES = 32 * 1024;
/** A file larger than this is read only this far: no more of it can reach the model. */
const READ_LIMIT_BYTES = INSTRUCTIONS_BUDGET_BYTES;
/** The instruction file of a folder, looked for above every path a tool touched. */
export const FOLDER_INSTRUCTION_FILE = 'AGENTS.md';
/** What each workspace root may hold, in the order given to the model. */
export const ROOT_INSTRUCTION_FILES = [FOLDER_INSTRUCTION_FILE, 'CLAUDE.md', '.github/copilot-instructions.md'];
/** Folders of touched paths looked at, newest first: enough for a long task, bounded per turn. */
const MAX_TOUCHED_FOLDERS = 64;
/** Files whose text is kept between turns: a turn's touched folders and the roots' files, with room. */
export const MAX_CACHED_INSTRUCTION_FILES = 128;

/** One instruction file in force, as the model gets it. */
export interface InstructionFile {
  /** `user`: the data directory's, for every project; `project`: a file of a workspace folder. */
  scope: 'user' | 'project';
  /** Relative to its workspace folder (prefixed with the folder's name when there are several); `AGENTS.md` for the user's. */
  path: string;
  /** Its size on disk. */
  bytes: number;
  /** Only part of it reached the model (the budget ran out). */
  cut: boolean;
  /** What the model reads: the text (or its beginning) and, when cut, a note saying so. */
  text: string;
}

/** One instruction file in force as clients see it (get_config, list_instructions): without its text. */
export type InstructionFileInfo = Omit<InstructionFile, 'text'>;

/** The answer for no touched paths (get_config asks it on every call), kept while nothing changed where its files live. */
interface RootsAnswer {
  /** The roots as given (compared first: resolving them costs more than the rest of a kept answer). */
  given: readonly string[];
  key: string;
  files: InstructionFile[];
  /** The files without their text, frozen: the same array while the answer is kept (get_config's shared answer compares it by identity). */
  infos: readonly InstructionFileInfo[];
  watch: PlacesWatch;
}

interface Cached {
  mtimeMs: number;
  size: number;
  text: string | undefined;
}

/**
 * The project's instruction files (AGENTS.md at each workspace root and the nearest one above each
 * path the agent's tools touched, CLAUDE.md, .github/copilot-instructions.md) and the user's own
 * (`<data dir>/AGENTS.md`). They are repository content: read only through the file tools'
 * confinement (a symbolic link leading out of the workspace, or into the data directory, is not
 * followed), as text, never run. Each is re-read when its size or modification time changes.
 */
export class InstructionFiles {
  private readonly cache = new Map<string, Cached>();
  private rootsAnswer: RootsAnswer | undefined;
  private closed = false;
  private rootsLook: { key: string; files: Promise<InstructionFile[]> } | undefined;

  constructor(private readonly userDir: string | undefined) {}

  /** Files whose text is kept now. */
  get cachedFiles(): number {
    return this.cache.size;
  }

  /** The files in force for a turn whose tools touched `touched` (paths as the tools were given them, newest last). */
  async inForce(roots: string[], touched: readonly string[] = []): Promise<InstructionFile[]> {
    if (touched.length > 0) return this.look(roots, touched, { linked: false });
    return this.atRoots(roots);
  }

  /**
   * The files of the roots and the user's, remembered while the folders they live in are unchanged
   * (get_config answers them on every call: four failed lookups each time were half its cost). A change
   * reaches a watcher's callback in the same poll phase as anything that finished after it, so waiting for
   * the next check phase before trusting the answer sees every change completed before this call.
   */
  private async atRoots(roots: readonly string[]): Promise<InstructionFile[]> {
    const kept = this.keptFor(roots);
    if (kept) {
      await nextCheckPhase();
      if (!kept.watch.changed) return packedMap(kept.files, (file) => ({ ...file }));
    }
    return packedMap(await this.lookOnce(roots), (file) => ({ ...file }));
  }

  /**
   * The files of the roots and the user's without their text (get_config's, on every call): while the
   * answer is kept, the same frozen array, after the one wait for the check phase (atRoots) and no copy.
   */
  infosAtRoots(roots: readonly string[]): Promise<readonly InstructionFileInfo[]> {
    const kept = this.keptFor(roots);
    if (kept) return nextCheckPhase().then(() => (kept.watch.changed ? this.lookInfos(roots) : kept.infos));
    return this.lookInfos(roots);
  }

  private async lookInfos(roots: readonly string[]): Promise<readonly InstructionFileInfo[]> {
    const files = await this.lookOnce(roots);
    // Kept (no link, no change while looking): its shared array; otherwise one made for this call.
    return this.rootsAnswer?.files === files ? this.rootsAnswer.infos : files.map(infoOf);
  }

  /** The kept answer when it is for `roots` and no change was seen yet (still to be confirmed in the check phase). */
  private keptFor(roots: readonly string[]): RootsAnswer | undefined {
    const kept = this.rootsAnswer;
    if (!kept || kept.watch.changed) return undefined;
    return sameStrings(kept.given, roots) || kept.key === keyOf(roots) ? kept : undefined;
  }

  /** A look at the roots' files; calls arriving together (many connections) share one. */
  private async lookOnce(roots: readonly string[]): Promise<InstructionFile[]> {
    const key = keyOf(roots);
    if (this.rootsLook?.key !== key) this.rootsLook = { key, files: this.lookAtRoots(key, [...roots]) };
    const look = this.rootsLook;
    try {
      return await look.files;
    } finally {
      if (this.rootsLook === look) this.rootsLook = undefined;
    }
  }

  private async lookAtRoots(key: string, roots: string[]): Promise<InstructionFile[]> {
    this.keepAnswer(undefined);
    // Watched before looking: a change while looking makes this answer one not to keep.
    const places = new PlacesWatch([
      ...roots.flatMap((root) => ROOT_INSTRUCTION_FILES.map((relative) => ({ base: path.resolve(root), relative }))),
      ...(this.userDir ? [{ base: this.userDir, relative: FOLDER_INSTRUCTION_FILE }] : []),
    ]);
    const links = { linked: false };
    const files = await this.look(roots, [], links).catch((error: unknown) => {
      places.close();
      throw error;
    });
    // A linked file's target may change without its folder changing: such answers are looked at afresh.
    if (links.linked || places.changed) places.close();
    else this.keepAnswer({ given: [...roots], key, files, infos: Object.freeze(files.map((file) => Object.freeze(infoOf(file)))), watch: places });
    return files;
  }

  private keepAnswer(answer: RootsAnswer | undefined): void {
    this.rootsAnswer?.watch.close();
    if (this.closed) answer?.watch.close();
    this.rootsAnswer = this.closed ? undefined : answer;
  }

  /** Lets the kept answer's watch go (the service stopped, or its open failed); nothing is kept after. */
  close(): void {
    this.closed = true;
    this.keepAnswer(undefined);
  }

  private async look(roots: string[], touched: readonly string[], links: { linked: boolean }): Promise<InstructionFile[]> {
    type Found = { root: string; relative: string; bytes: number; text: string };
    const atRoots = roots.flatMap((given) => {
      const root = path.resolve(given);
      return ROOT_INSTRUCTION_FILES.map(async (relative): Promise<Found | undefined> => {
        const file = await this.readProjectFile(roots, root, relative, links);
        return file && { root, relative, ...file };
      });
    });
    const nested = nearestFolders(roots, touched).map((folder) => this.nearestAbove(roots, folder.root, folder.relative));
    // Looked at side by side: each look is a few system calls, each waiting its turn in libuv's pool.
    const [user, found] = await Promise.all([this.userDir ? this.readUserFile(path.join(this.userDir, FOLDER_INSTRUCTION_FILE), links) : undefined, Promise.all([...atRoots, ...nested])]);
    const files: { scope: 'user' | 'project'; path: string; bytes: number; text: string }[] = user ? [{ scope: 'user', path: FOLDER_INSTRUCTION_FILE, ...user }] : [];
    const seen = new Set<string>();
    for (const file of found) {
      const key = file && path.join(file.root, file.relative);
      if (!file || seen.has(key!)) continue;
      seen.add(key!);
      files.push({ scope: 'project', path: roots.length > 1 ? `${path.basename(file.root)}/${file.relative}` : file.relative, bytes: file.bytes, text: file.text });
    }
    return withinBudget(files);
  }

  /** The AGENTS.md of `relative`'s folder or the nearest folder above it, below the root (the root's own is read anyway). */
  private async nearestAbove(roots: string[], root: string, relative: string): Promise<{ root: string; relative: string; bytes: number; text: string } | undefined> {
    for (let folder = relative; folder !== '.' && folder !== ''; folder = path.posix.dirname(folder)) {
      const candidate = `${folder}/${FOLDER_INSTRUCTION_FILE}`;
      const file = await this.readProjectFile(roots, root, candidate);
      if (file) return { root, relative: candidate, ...file };
    }
    return undefined;
  }

  /** A workspace file through the file tools' confinement; undefined when absent, refused, binary or not a file. */
  private async readProjectFile(roots: string[], root: string, relative: string, links: { linked: boolean } = { linked: false }): Promise<{ bytes: number; text: string } | undefined> {
    // A cheap look first: most places hold none, and those cost one lstat each.
    const info = await lstat(path.join(root, relative)).catch(() => undefined);
    if (!info) return undefined;
    if (info.isSymbolicLink()) links.linked = true;
    let handle: FileHandle | undefined;
    try {
      const target = await resolveWorkspacePath(roots, path.join(root, relative));
      handle = await openForReading(target, relative);
      return await this.readOpen(target.path, handle, links);
    } catch {
      // Outside the workspace through a link, in the data directory, unreadable: not in force.
      return undefined;
    } finally {
      await handle?.close();
    }
  }

  /** The user's file in the data directory: a regular file, not followed if it is a symbolic link. */
  private async readUserFile(file: string, links: { linked: boolean }): Promise<{ bytes: number; text: string } | undefined> {
    let handle: FileHandle | undefined;
    try {
      handle = await open(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
      return await this.readOpen(file, handle, links);
    } catch {
      return undefined;
    } finally {
      await handle?.close();
    }
  }

  /** The text of an open regular file, from the cache while its size and modification time are unchanged. */
  private async readOpen(key: string, handle: FileHandle, links: { linked: boolean }): Promise<{ bytes: number; text: string } | undefined> {
    const info = await handle.stat();
    if (!info.isFile()) return undefined;
    // Written through another name, its folder would not see the change.
    if (info.nlink > 1) links.linked = true;
    let cached = this.cache.get(key);
    if (!cached || cached.mtimeMs !== info.mtimeMs || cached.size !== info.size) {
      const length = Math.min(info.size, READ_LIMIT_BYTES);
      const buffer = Buffer.alloc(length);
      const { bytesRead } = length > 0 ? await handle.read(buffer, 0, length, 0) : { bytesRead: 0 };
      // A file cut at the read limit may end inside a character: decode what is whole.
      const raw = buffer.subarray(0, bytesRead);
      const text = decodeText(raw) ?? (info.size > READ_LIMIT_BYTES ? decodeText(trimPartial(raw)) : undefined);
      cached = { mtimeMs: info.mtimeMs, size: info.size, text };
    }
    this.keep(key, cached);
    if (cached.text === undefined || cached.text.trim() === '') return undefined;
    return { bytes: info.size, text: cached.text };
  }

  /**
   * Keeps `cached` as the newest (a repository can hold an AGENTS.md in every folder: only the most
   * recently used MAX_CACHED_INSTRUCTION_FILES are kept, the roots' own are used every turn).
   */
  private keep(key: string, cached: Cached): void {
    this.cache.delete(key);
    this.cache.set(key, cached);
    if (this.cache.size > MAX_CACHED_INSTRUCTION_FILES) this.cache.delete(this.cache.keys().next().value!);
  }
}

/**
 * The instruction files in force as one short string (list_instructions' `fingerprint`, turn.ended's
 * `instructions`): the same for the same files with the same words, cut the same, whatever their order
 * (a page compares it with the one of the list it shows, and asks again only when they differ). Keyed by
 * `key` (the service's own, random at each start): clients that see it but not the words (a webhook
 * account, a password user) cannot confirm a guess of them offline.
 */
function instructionsFingerprint(files: readonly InstructionFile[], key: Uint8Array): string {
  const entries = files.map((file) => JSON.stringify([file.scope, file.path, file.bytes, file.cut, file.text])).sort();
  return createHmac('sha256', key).update(entries.join('\n')).digest('base64url').slice(0, 16);
}

/**
 * The agent's fingerprints of the files in force (instructionsFingerprint), under its own key, drawn at each
 * start. A turn's end asks for one every turn and the files seldom change: the last answer is kept while the
 * files are the same (their texts are the same strings while the cache keeps them: compared at once), so a
 * turn pays a comparison, not an HMAC (~12 us a turn in the agent bench's profile, s33).
 */
export class InstructionsFingerprints {
  private readonly key = randomBytes(32);
  private last: { files: readonly InstructionFile[]; value: string } | undefined;

  of(files: readonly InstructionFile[]): string {
    const last = this.last;
    if (last && sameFiles(last.files, files)) return last.value;
    const value = instructionsFingerprint(files, this.key);
    this.last = { files, value };
    return value;
  }
}

function sameFiles(a: readonly InstructionFile[], b: readonly InstructionFile[]): boolean {
  return a.length === b.length && a.every((x, i) => x.scope === b[i].scope && x.path === b[i].path && x.bytes === b[i].bytes && x.cut === b[i].cut && x.text === b[i].text);
}

function infoOf({ text: _text, ...info }: InstructionFile): InstructionFileInfo {
  return info;
}

/** The roots resolved, as one key. */
function keyOf(roots: readonly string[]): string {
  return roots.map((root) => path.resolve(root)).join('\0');
}

export function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}

/** The bytes up to the last character that starts before the end (a read cut short may end inside one). */
function trimPartial(raw: Buffer): Buffer {
  let end = raw.length;
  while (end > 0 && (raw[end - 1] & 0xc0) === 0x80) end--;
  return raw.subarray(0, Math.max(0, end - 1));
}

/** The folders of the touched paths inside a workspace root, newest first, each once. */
function nearestFolders(roots: string[], touched: readonly string[]): { root: string; relative: string }[] {
  const folders = new Map<string, { root: string; relative: string }>();
  for (let i = touched.length - 1; i >= 0 && folders.size < MAX_TOUCHED_FOLDERS; i -= 1) {
    const place = placeInRoots(roots, touched[i]);
    if (!place || place.relative === '.') continue;
    // The path itself may be a folder (list_directory, search_files): its own AGENTS.md is the nearest.
    const key = path.join(place.root, place.relative);
    if (!folders.has(key)) folders.set(key, place);
  }
  return [...folders.values()];
}

/** The files in order, their text cut once INSTRUCTIONS_BUDGET_BYTES are used, each cut one saying so. */
function withinBudget(found: { scope: 'user' | 'project'; path: string; bytes: number; text: string }[]): InstructionFile[] {
  let left = INSTRUCTIONS_BUDGET_BYTES;
  return found.map((file) => {
    const size = Buffer.byteLength(file.text, 'utf8');
    const wholeFile = size >= file.bytes;
    if (size <= left && wholeFile) {
      left -= size;
      return { ...file, cut: false };
    }
    const kept = prefixWithin(file.text, Math.max(0, left));
    const keptBytes = Buffer.byteLength(kept, 'utf8');
    left -= keptBytes;
    const note = `[Cut: only the first ${formatBytes(keptBytes)} of ${file.path} (${formatBytes(file.bytes)}) are included; instruction files are limited to ${formatBytes(INSTRUCTIONS_BUDGET_BYTES)} in all.${file.scope === 'project' ? ' Read the file for the rest when it matters.' : ''}]`;
    return { ...file, cut: true, text: kept ? `${kept}\n\n${note}` : note };
  });
}
