import * as vscode from 'vscode';
import type { PublicConfig } from './backend';
import type { HostingState } from './hosting';

export const STATUS_BAR_COMMAND = 'remoteAssistant.setPermissionMode';
/** Opens the chat on the first waiting permission request (the waiting count's item). */
export const SHOW_PENDING_COMMAND = 'remoteAssistant.showPendingPermission';

/** `$(bell-dot) 2`: permission requests waiting for an answer, from any client. */
export function pendingText(count: number): { text: string; tooltip: string } {
  const what = count === 1 ? '1 permission request waits' : `${count} permission requests wait`;
  return { text: `$(bell-dot) ${count}`, tooltip: `Remote Assistant: ${what} for an answer. Click to open it in the chat.` };
}

/** `$(radio-tower) 5000 · ask`: where the service is and the permission mode in force. */
export function statusText(state: HostingState, config: PublicConfig | undefined): { text: string; tooltip: string } {
  const mode = config?.permission_mode ?? '…';
  switch (state.state) {
    case 'hosting':
      return { text: `$(radio-tower) ${state.port} · ${mode}`, tooltip: `Remote Assistant: serving on port ${state.port}, permission mode ${mode}. Click to change the mode.` };
    case 'client':
      return { text: `$(plug) ${state.port} · ${mode}`, tooltip: `Remote Assistant: hosted by another window on port ${state.port}, permission mode ${mode}.` };
    case 'port_busy':
      return { text: `$(warning) ${state.port} busy · ${mode}`, tooltip: `Remote Assistant: port ${state.port} is used by another program; the assistant works in this editor only.` };
    case 'starting':
    case 'waiting':
      return { text: '$(sync~spin) Remote Assistant', tooltip: `Remote Assistant: starting${state.state === 'waiting' ? ` (${state.detail})` : ''}` };
    case 'stopped':
      return { text: '$(circle-slash) Remote Assistant', tooltip: 'Remote Assistant: stopped' };
    case 'error':
      return { text: '$(error) Remote Assistant', tooltip: `Remote Assistant: ${state.detail}` };
  }
}

export class StatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  /** Shown only while requests wait, beside the port/mode item. */
  readonly pending: vscode.StatusBarItem;
  private state: HostingState = { state: 'starting' };
  private config: PublicConfig | undefined;

  constructor() {
    this.item = vscode.window.createStatusBarItem('remoteAssistant.status', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'Remote Assistant';
    this.item.command = STATUS_BAR_COMMAND;
    this.render();
    this.item.show();
    this.pending = vscode.window.createStatusBarItem('remoteAssistant.pending', vscode.StatusBarAlignment.Right, 101);
    this.pending.name = 'Remote Assistant: waiting permission requests';
    this.pending.command = SHOW_PENDING_COMMAND;
    // Something waits on the user: it should catch the eye like a warning does.
    this.pending.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
  }

  setPending(count: number): void {
    if (count === 0) return this.pending.hide();
    const { text, tooltip } = pendingText(count);
    this.pending.text = text;
    this.pending.tooltip = tooltip;
    this.pending.show();
  }

  update(state?: HostingState, config?: PublicConfig): void {
    if (state) this.state = state;
    if (config) this.config = config;
    this.render();
  }

  private render(): void {
    const { text, tooltip } = statusText(this.state, this.config);
    this.item.text = text;
    this.item.tooltip = tooltip;
  }

  dispose(): void {
    this.item.dispose();
    this.pending.dispose();
  }
}
