import * as vscode from 'vscode';
import { DEFAULT_PORT } from '../protocol/config';
import { autoStartOf, SETTINGS_SECTION } from './settings-section';

export { SETTINGS_SECTION };

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
    autoStart: autoStartOf(c),
    lanAccess: c.get<boolean>('lanAccess', false),
  };
}
