import * as vscode from 'vscode';
import { DEFAULT_PORT } from '../protocol/config';

export const SETTINGS_SECTION = 'remoteAssistant';

export interface Settings {
  port: number;
  autoStart: boolean;
  lanAccess: boolean;
}

export function readSettings(): Settings {
  const c = vscode.workspace.getConfiguration(SETTINGS_SECTION);
  const port = c.get<number>('port', DEFAULT_PORT);
  return {
    port: Number.isInteger(port) && port >= 0 && port <= 65535 ? port : DEFAULT_PORT,
    autoStart: c.get<boolean>('autoStart', true),
    lanAccess: c.get<boolean>('lanAccess', false),
  };
}
