import type { Provider } from './providers/types';
import type { TerminalRunner } from './tools/terminal-run-command';
import type { ToolSource } from './tools/types';

/**
 * What only the program hosting the service can do. The headless CLI supplies nothing; the VS Code
 * extension supplies the editor's language models, editor tools and the
 * API key kept in SecretStorage.
 */
export interface Host {
  /** The `vscode` provider: the editor's language models (vscode.lm). */
  languageModels?: () => Provider | undefined;
  /** Where run_command's shell command lines run visibly (the editor's terminal): it then takes the built-in's place, which stays its fallback. */
  terminal?: TerminalRunner;
  /** Tools only the host has (diagnostics, the active selection...). */
  toolSources?: ToolSource[];
  /** Tools the host offers from other programs (VS Code's lm tools): after every other source, so they never shadow one. */
  laterToolSources?: ToolSource[];
  /**
   * The folders file tools work in, when the host knows them (the editor's open workspace folders).
   * `workspace` of service.json still wins; without either, the current directory.
   */
  workspaceRoots?: () => string[];
  /** The provider's API key, when the host keeps it (instead of service.json). */
  apiKey?: (provider: string) => string | undefined;
}
