/**
 * Messages between the chat UI in a VS Code webview and the extension (postMessage). The UI sends
 * protocol frames exactly as a WebSocket client would; the extension feeds them to the service's one
 * dispatcher and posts back the envelope, and every event of the UI's session. So the UI speaks one
 * protocol whether it runs in the editor or on a phone. No `vscode` import here: both sides use it.
 */

/** UI -> extension. */
export type UiToHost =
  /** A protocol command (`{type, id, ...}`), answered by a `response` with the same id. */
  | { kind: 'frame'; frame: Record<string, unknown> }
  /** Something only the editor can do. */
  | { kind: 'action'; action: HostAction; argument?: string }
  /** The UI has loaded and listens. */
  | { kind: 'ready' };

export type HostAction =
  /** Run "Set API Key". */
  | 'setApiKey'
  /** Run "Select Model". */
  | 'selectModel'
  /** Run "Select Provider". */
  | 'selectProvider'
  /** Open a link (argument: the URL) through the editor. */
  | 'openLink'
  /** Open a workspace file (argument: the path). */
  | 'openFile';

/** Extension -> UI. */
export type HostToUi =
  /** The envelope answering a `frame`. */
  | { kind: 'response'; envelope: Record<string, unknown> }
  /** A service event for this session (chat.delta, tool.*, permission.*, config.changed...). */
  | { kind: 'event'; event: Record<string, unknown> }
  /** The service's state as the host sees it (the UI shows it and disables sending when not running). */
  | { kind: 'state'; state: 'starting' | 'running' | 'stopped' | 'error'; detail?: string };
