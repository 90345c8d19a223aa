/**
 * Messages between the chat UI in a VS Code webview and the extension (postMessage). The UI sends
 * protocol frames exactly as a WebSocket client would; the extension feeds them to the service's one
 * dispatcher and posts back the envelope, and every event of the UI's session. So the UI speaks one
 * protocol whether it runs in the editor or on a phone. Types only (the web bundle stays free of zod);
 * no `vscode` import: both sides use it.
 */
import type { ContextItem } from './chat-context';
import type { CommandInput } from './commands';
import type { Envelope } from './envelope';
import type { ServiceEvent } from './events';

/** An event only the editor sends its own view (the "New Conversation" command). */
export interface EditorNewConversationEvent {
  event: 'editor.new_conversation';
}

/**
 * The editor asks the view to show a waiting permission request (the status bar's count was
 * clicked, or "Show in Chat" on a notification): open its conversation and bring its card forward.
 */
export interface EditorShowRequestEvent {
  event: 'editor.show_request';
  request_id: string;
  conversation_id: string;
}

/** The editor's Search History chose a message: open its conversation there and show the message. */
export interface EditorShowMessageEvent {
  event: 'editor.show_message';
  conversation_id: string;
  message_id: string;
}

/** "Ask Remote Assistant" on a selection: a chip for the chat input (the view is revealed first). */
export interface EditorAddContextEvent {
  event: 'editor.add_context';
  item: ContextItem;
}

/**
 * The active editor's file, as a chip of the chat input (null: no editor, or its file cannot be
 * attached). `attach`: the setting `remoteAssistant.attachActiveFile`, whether the chip starts attached.
 */
export interface EditorActiveFileEvent {
  event: 'editor.active_file';
  item: ContextItem | null;
  attach: boolean;
}

/** What the UI hears: a service event (typed by events.ts) or one of the editor's own. */
export type ViewEvent = ServiceEvent | EditorNewConversationEvent | EditorShowRequestEvent | EditorShowMessageEvent | EditorAddContextEvent | EditorActiveFileEvent;

/**
 * Questions only the editor answers, for `#file` mentions: workspace files matching what was typed
 * (VS Code's findFiles, its excludes and .gitignore honoured), or one file as a chip (its text).
 */
export type EditorLookup = { files: string } | { file: string };
export type EditorLookupResult = { files: string[] } | { item: ContextItem } | { error: string };

/** UI -> extension. */
export type UiToHost =
  /** A protocol command (`{type, id, ...}`), answered by a `response` with the same id. */
  | { kind: 'frame'; frame: CommandInput }
  /** Something only the editor can do. */
  | { kind: 'action'; action: HostAction; argument?: string }
  /** The UI has loaded and listens. */
  | { kind: 'ready' }
  /** A question for the editor, answered by a `lookup_result` with the same id. */
  | { kind: 'lookup'; id: string; lookup: EditorLookup };

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
  | 'openFile'
  /**
   * Open the editor's diff view of a waiting permission request's file change (argument: the
   * request_id; the extension rebuilds the proposed text from the request's diff preview).
   */
  | 'showDiff'
  /** Save a conversation to a file (argument: `<format>:<conversation_id>`, format `markdown` or `json`): the editor's Export Conversation. */
  | 'exportConversation'
  /**
   * Open the three-way view of a file a turn wrote that changed since (argument: JSON
   * `{conversation_id, message_id, path}`; docs/protocol.md, "Undoing a turn").
   */
  | 'showUndoThreeWay'
  /** A worktree conversation's changes in VS Code's diff editor (argument: the conversation_id): "Review Changes". */
  | 'reviewChanges'
  /** A worktree conversation's folder in a new window (argument: the conversation_id). */
  | 'openWorktree';

/** The service's state as the host sees it (the UI shows it and disables sending when not running). */
export type HostState = 'starting' | 'running' | 'stopped' | 'error';

/** Extension -> UI. */
export type HostToUi =
  /** The envelope answering a `frame`. */
  | { kind: 'response'; envelope: Envelope }
  /** A service event for this session (chat.delta, tool.*, permission.*, config.changed...). */
  | { kind: 'event'; event: ViewEvent }
  | { kind: 'state'; state: HostState; detail?: string }
  | { kind: 'lookup_result'; id: string; result: EditorLookupResult }
  /** Two or more of the others, sent within one turn of the extension's loop: taken in this order (one alone comes as itself). */
  | { kind: 'batch'; messages: HostToUi[] };
