// The extension's settings section and `autoStart`, apart from settings.ts (which reads the port with the
// protocol's config): early-start.ts reads autoStart before the rest of the bundle loads.
import type * as vscode from 'vscode';

export const SETTINGS_SECTION = 'remoteAssistant';

/** Whether this window hosts the service when it starts (default: yes). */
export const autoStartOf = (settings: vscode.WorkspaceConfiguration): boolean => settings.get<boolean>('autoStart', true);
