import * as vscode from 'vscode';
import { SETTINGS_SECTION } from './settings';

export const CHOOSE_PORT = 'Choose Another Port';
export const RETRY = 'Retry';

export function validatePort(value: string): string | undefined {
  const n = Number(value);
  return /^\d+$/.test(value.trim()) && n >= 1 && n <= 65535 ? undefined : 'Enter a port number from 1 to 65535';
}

/**
 * Another program holds the port: say so, without blocking the editor, and offer a new port (written
 * to the setting, which restarts the service) or a retry.
 */
export async function offerPortBusyActions(port: number, retry: () => Promise<unknown>): Promise<void> {
  const choice = await vscode.window.showWarningMessage(
    `Remote Assistant: port ${port} is in use by another program, so phones and scripts cannot reach the assistant. The chat in this editor still works.`,
    CHOOSE_PORT,
    RETRY,
  );
  if (choice === RETRY) await retry();
  if (choice === CHOOSE_PORT) {
    const value = await vscode.window.showInputBox({
      title: 'Remote Assistant: Port',
      prompt: 'The port the service listens on',
      value: String(port === 65535 ? 5001 : port + 1),
      validateInput: validatePort,
    });
    if (value !== undefined) await vscode.workspace.getConfiguration(SETTINGS_SECTION).update('port', Number(value), vscode.ConfigurationTarget.Global);
  }
}
