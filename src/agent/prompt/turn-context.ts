import type { ServiceConfig } from '../../protocol';
import type { MessageRow } from '../../store';
import { contextOf, fenced } from '../chat-context';
import type { ChatMessage } from '../providers/types';
import type { ToolCallData } from '../transcript';
import { environmentBlock, momentNote, type MomentFacts, type WorkplaceFacts } from './environment';
import { GitStatusCache } from './git-status';
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
    const { git } = this;
    return momentNote({ ...facts, roots, git: (folder) => (git ? git.summary(folder) : Promise.resolve(undefined)) }).then((content) => ({ role: 'user', content, moment: true }));
  }

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
    const touched = [...new Set(touchedPaths(rows))];
    const key = touched.join('\n');
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

/**
 * The workspace paths the conversation's tools were called with, and the files the user attached from
 * the editor, oldest first: the nearest AGENTS.md above each of them is in force.
 */
export function touchedPaths(rows: readonly MessageRow[]): string[] {
  const paths: string[] = [];
  for (const row of rows) {
    if (row.role === 'user') {
      for (const item of contextOf(row.data) ?? []) paths.push(item.path);
      continue;
    }
    if (row.role !== 'tool' || !row.tool_name) continue;
    const argument = PATH_ARGUMENTS[row.tool_name];
    const data = row.data as Partial<ToolCallData> | null;
    if (!argument || data?.kind !== 'call') continue;
    const value = data.arguments?.[argument];
    if (typeof value === 'string' && value.length > 0) paths.push(value);
  }
  return paths;
}
