import type { ServiceConfig } from '../../protocol';
import type { MessageRow } from '../../store';
import { contextOf, fenced } from '../chat-context';
import type { ChatMessage } from '../providers/types';
import type { ToolCallData } from '../transcript';
import { environmentBlock, momentNote, type MomentFacts, type WorkplaceFacts } from './environment';
import { GitStatusCache, type GitSummary } from './git-status';
import { InstructionFiles, sameStrings, type InstructionFile, type InstructionFileInfo } from './instruction-files';
import { systemPromptOf } from './system-prompt';

/** Tools whose `path` (or `cwd`) names a place in the workspace: the nearest AGENTS.md above it applies. */
const PATH_ARGUMENTS: Readonly<Record<string, string>> = {
  read_file: 'path',
  write_file: 'path',
  edit_file: 'path',
  list_directory: 'path',
  search_files: 'path',
  run_command: 'cwd',
};

/**
 * What the model is told besides the conversation, built for each request: the system prompt (ours and
 * the user's), the instruction files in force and the environment first; the turn's note (time, git,
 * who sent it) last.
 */
export class TurnContext {
  readonly instructions: InstructionFiles;
  /** None in a practice twin (practiceTwin): it asks git nothing. */
  private readonly git: GitStatusCache | undefined;
  /** The last system message and what it was made of (systemMessage): made again only when one of them changed. */
  private lastSystem: SystemParts | undefined;
  /** The touched paths of each conversation's last window of rows (TouchedWindows). */
  private readonly touched = new TouchedWindows();

  constructor(
    private readonly workspaceRoots: () => string[],
    /** The data directory: its AGENTS.md is the user's instructions for every project. */
    userDir: string | undefined,
    twinOf?: TurnContext,
  ) {
    this.instructions = twinOf?.instructions ?? new InstructionFiles(userDir);
    this.git = twinOf ? undefined : new GitStatusCache();
  }

  /**
   * The context of the warm-up's practice turn (Agent.practiceTwin): this one's instruction files (read
   * ahead by warmUp, shared), and no git: its status is the real turns' to ask, and a practice that
   * waited for it (the git starter's own start, up to a second on a loaded machine) was not over when
   * the first chat came; its note then says nothing of git, through the same code.
   */
  practiceTwin(): TurnContext {
    return new TurnContext(this.workspaceRoots, undefined, this);
  }

  /** Lets the watches of what was read go (the service stopped, or its open failed); a twin's instruction files are its original's to close. */
  close(): void {
    // A twin has no git cache of its own: its original's.
    if (this.git) this.instructions.close();
    this.git?.close();
  }

  /**
   * The instruction files in force for a conversation whose stored rows are `rows` (none: before any tool
   * ran). `roots`, here and below: the conversation's own (its worktree's folder), else the workspace's.
   */
  filesInForce(rows: readonly MessageRow[] = [], roots: readonly string[] = this.workspaceRoots()): Promise<InstructionFile[]> {
    return this.instructions.inForce([...roots], touchedPaths(rows));
  }

  /** The instruction files of the roots and the user's, without their text: shared while unchanged (InstructionFiles.infosAtRoots). */
  rootFileInfos(roots: readonly string[] = this.workspaceRoots()): Promise<readonly InstructionFileInfo[]> {
    return this.instructions.infosAtRoots(roots);
  }

  /** The turn's note, sent after the conversation (computed once a turn: git is asked then). */
  moment(facts: Omit<MomentFacts, 'roots' | 'git'>, roots: readonly string[] = this.workspaceRoots()): Promise<ChatMessage> {
    return momentNote({ client: facts.client, remote: facts.remote, now: facts.now, roots, git: this.gitSummary }).then(momentMessage);
  }

  /** git's summary of a folder (none in a practice twin), made once (momentNote asks it each turn). */
  private readonly gitSummary = (folder: string): Promise<GitSummary | undefined> => (this.git ? this.git.summary(folder) : Promise.resolve(undefined));

  /**
   * Reads ahead what a first turn would wait for, so it is answered as fast as the next (the service's
   * warm-up once listening, before the store is open: none of it needs the store): the instruction files
   * of the roots and the user's, and a turn's note, thrown away, for what it reads: git's status of each
   * root (kept GIT_STATUS_MAX_AGE_MS at most, as for any turn) and the time zone's name (ICU's data,
   * loaded at its first use); then a first step's system message from them, thrown away too: its code's
   * first run is not the turn's.
   */
  async warmUp(config: ServiceConfig, roots: readonly string[] = this.workspaceRoots()): Promise<void> {
    await Promise.all([this.filesInForce([], roots), this.moment({ client: 'warm-up', remote: false }, roots)]);
    await this.systemMessage(config, [], { model: config.model, contextWindow: null }, {}, roots);
  }

  /** A tool wrote a file or ran a command: git's status is asked again next turn. */
  filesChanged(): void {
    this.git?.changed();
  }

  /**
   * The system message of one request: prompt, instruction files, environment (what stays true between
   * turns: what changes goes into the turn's note, `moment`). The files are looked at
   * afresh (re-read if changed) on a turn's first step, and on a later step when it touched a path not
   * touched before (a folder with its own AGENTS.md, or an instruction file it edited); `turn` keeps
   * them between the steps of one turn.
   */
  async systemMessage(
    config: ServiceConfig,
    rows: readonly MessageRow[],
    workplace: Omit<WorkplaceFacts, 'roots'>,
    turn: TurnInstructions = {},
    roots: readonly string[] = this.workspaceRoots(),
  ): Promise<ChatMessage> {
    const { touched, key } = this.touched.of(rows);
    if (turn.files === undefined || turn.key !== key) {
      turn.files = await this.instructions.inForce([...roots], touched);
      turn.key = key;
    }
    const files = turn.files;
    const prompt = systemPromptOf(config);
    const kept = this.lastSystem;
    if (kept && kept.prompt === prompt && kept.model === workplace.model && kept.contextWindow === workplace.contextWindow && sameStrings(kept.roots, roots) && sameFiles(kept.files, files)) {
      return { role: 'system', content: kept.content };
    }
    const parts = [prompt, instructionsText(files), environmentBlock({ ...workplace, roots })].filter((part) => part.length > 0);
    const content = parts.join('\n\n');
    this.lastSystem = { prompt, files, model: workplace.model, contextWindow: workplace.contextWindow, roots: [...roots], content };
    return { role: 'system', content };
  }
}

function momentMessage(content: string): ChatMessage {
  return { role: 'user', content, moment: true };
}

/** What a system message is made of besides what stays for the process (the OS, the shell), and its text. */
interface SystemParts extends Omit<WorkplaceFacts, 'roots'> {
  prompt: string;
  files: readonly InstructionFile[];
  roots: readonly string[];
  content: string;
}

/** Whether two lists of instruction files read the same to the model (instructionsText: scope, path, text). */
function sameFiles(a: readonly InstructionFile[], b: readonly InstructionFile[]): boolean {
  return a.length === b.length && a.every((file, i) => file.scope === b[i].scope && file.path === b[i].path && file.text === b[i].text);
}

/** The instruction files of a turn so far, and the touched paths they were found for. */
export interface TurnInstructions {
  key?: string;
  files?: InstructionFile[];
}

/** The instruction files as the model reads them: each under a heading naming it, fenced (its text cannot pose as ours). */
export function instructionsText(files: readonly InstructionFile[]): string {
  if (files.length === 0) return '';
  const blocks = files.map((file) => `## ${file.scope === 'user' ? "The user's own instructions (for every project)" : `${file.path} (project)`}\n${fenced(file.text)}`);
  return `# Instruction files in force\n${blocks.join('\n\n')}`;
}

/** A window's touched paths once (first occurrence kept, oldest first), and them joined: what a step compares. */
interface Touched {
  touched: string[];
  key: string;
}

/** Conversations whose last window's touched paths are kept (TouchedWindows), most recently asked last. */
export const MAX_TOUCHED_WINDOWS = 64;

/**
 * touchedPaths of each conversation's last window of rows, kept: a step's window is the last one with
 * the rows stored since appended and, once the history cache holds its most, as many let go at its
 * front (history-cache.ts), and every step scanned all of them again (500 rows: about 0.017 ms of a
 * warm turn, issue 25). A row is never changed once made (the cache reads a cut or undone conversation
 * anew: new objects), and a window holds every row of its conversation from its first to its last; so
 * the last window's last row, found again by identity in the new window whose first row is not older
 * than the last window's, says the rows up to it are the last window's from that first row on.
 * Anything else (another array of rows, read elsewhere) is scanned whole.
 */
export class TouchedWindows {
  private readonly windows = new Map<string, { first: number; last: MessageRow; found: { seq: number; paths: string[] }[]; touched: Touched }>();

  of(rows: readonly MessageRow[]): Touched {
    if (rows.length === 0) return { touched: [], key: '' };
    const conversation = rows[0].conversation_id;
    const kept = this.windows.get(conversation);
    let at = -1;
    if (kept && rows[0].seq >= kept.first) for (let i = rows.length - 1; i >= 0 && rows[i].seq >= kept.last.seq; i--) if (rows[i] === kept.last) at = i;
    let found: { seq: number; paths: string[] }[];
    let same: boolean;
    if (kept && at >= 0) {
      const start = rows[0].seq;
      found = kept.found[0] === undefined || kept.found[0].seq >= start ? kept.found : kept.found.filter((entry) => entry.seq >= start);
      same = found === kept.found;
      for (let i = at + 1; i < rows.length; i++) {
        const paths = rowPaths(rows[i]);
        if (paths.length === 0) continue;
        if (same) found = [...found];
        same = false;
        found.push({ seq: rows[i].seq, paths });
      }
    } else {
      found = [];
      same = false;
      for (const row of rows) {
        const paths = rowPaths(row);
        if (paths.length > 0) found.push({ seq: row.seq, paths });
      }
    }
    const touched = same && kept ? kept.touched : touchedOf(found);
    this.windows.delete(conversation);
    this.windows.set(conversation, { first: rows[0].seq, last: rows[rows.length - 1], found, touched });
    for (const oldest of this.windows.keys()) {
      if (this.windows.size <= MAX_TOUCHED_WINDOWS) break;
      this.windows.delete(oldest);
    }
    return touched;
  }
}

function touchedOf(found: readonly { paths: string[] }[]): Touched {
  const touched = [...new Set(found.flatMap((entry) => entry.paths))];
  return { touched, key: touched.join('\n') };
}

/**
 * The workspace paths the conversation's tools were called with, and the files the user attached from
 * the editor, oldest first: the nearest AGENTS.md above each of them is in force.
 */
export function touchedPaths(rows: readonly MessageRow[]): string[] {
  return rows.flatMap(rowPaths);
}

const NONE: string[] = [];

/** The paths one row touched (touchedPaths). */
function rowPaths(row: MessageRow): string[] {
  if (row.role === 'user') return contextOf(row.data)?.map((item) => item.path) ?? NONE;
  if (row.role !== 'tool' || !row.tool_name) return NONE;
  const argument = PATH_ARGUMENTS[row.tool_name];
  const data = row.data as Partial<ToolCallData> | null;
  if (!argument || data?.kind !== 'call') return NONE;
  const value = data.arguments?.[argument];
  return typeof value === 'string' && value.length > 0 ? [value] : NONE;
}
