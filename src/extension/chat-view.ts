import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { HostAction, ViewEvent } from '../protocol';
import type { Backend } from './backend';
import { renderWebviewHtml } from '../web/webview-html';
import type { HostingState } from './hosting';
import { WebviewBridge, type EditorHooks, type PermissionRequestEvent } from './webview-bridge';

export const CHAT_VIEW_ID = 'remoteAssistant.chat';
export const CHAT_CONTAINER_ID = 'remoteAssistant';

/** The chat view in its own activity bar container; each resolved view is one ClientSession. */
export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private bridge: WebviewBridge | undefined;
  private view: vscode.WebviewView | undefined;
  /** The bridge's view has loaded and listens (posts before then could be lost). */
  private ready = false;
  /** Events for the view kept until it is ready (a chip asked for before the view was ever opened). */
  private readonly kept: ViewEvent[] = [];
  private readonly visibility = new vscode.EventEmitter<boolean>();
  private readonly becameReady = new vscode.EventEmitter<void>();
  /** A view loaded and listens (it was opened, or reloaded). */
  readonly onDidBecomeReady = this.becameReady.event;
  /** The view was shown or hidden (or went away: false). */
  readonly onDidChangeVisibility = this.visibility.event;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly current: () => { backend: Backend | undefined; state: HostingState },
    private readonly runAction: (action: HostAction, argument?: string) => void,
    private readonly secrets: () => string[],
    /** A permission request of a chat this view runs (see WebviewBridge). */
    private readonly onOwnRequest: (request: PermissionRequestEvent) => void = () => undefined,
    /** Answers the view's `#file` questions. */
    private readonly lookup?: EditorHooks['lookup'],
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.bridge?.dispose();
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = renderWebviewHtml({
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat-webview.js')).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'chat.css')).toString(),
      cspSource: view.webview.cspSource,
      nonce: randomBytes(16).toString('base64'),
    });
    const bridge = new WebviewBridge((message) => void view.webview.postMessage(message), this.runAction, this.secrets, this.onOwnRequest, {
      lookup: this.lookup,
      ready: () => {
        if (this.bridge !== bridge) return;
        this.ready = true;
        for (const event of this.kept.splice(0)) bridge.postEvent(event);
        this.becameReady.fire();
      },
    });
    this.bridge = bridge;
    this.ready = false;
    const { backend, state } = this.current();
    bridge.setBackend(backend, state);
    const subscription = view.webview.onDidReceiveMessage((message) => bridge.receive(message));
    const shown = view.onDidChangeVisibility(() => this.visibility.fire(view.visible));
    view.onDidDispose(() => {
      subscription.dispose();
      shown.dispose();
      bridge.dispose();
      if (this.bridge === bridge) {
        this.bridge = undefined;
        this.ready = false;
        this.view = undefined;
        this.visibility.fire(false);
      }
    });
    this.visibility.fire(view.visible);
  }

  backendChanged(backend: Backend | undefined, state: HostingState): void {
    this.bridge?.setBackend(backend, state);
  }

  stateChanged(state: HostingState): void {
    this.bridge?.setState(state);
  }

  /** An editor-side event for the UI (e.g. `editor.new_conversation`). */
  post(event: ViewEvent): void {
    this.bridge?.postEvent(event);
  }

  /** An event the view must not miss (a chip): posted once the view is ready, kept until then. */
  postWhenReady(event: ViewEvent): void {
    if (this.bridge && this.ready) this.bridge.postEvent(event);
    else this.kept.push(event);
  }

  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  dispose(): void {
    this.visibility.dispose();
    this.becameReady.dispose();
    this.bridge?.dispose();
  }
}
