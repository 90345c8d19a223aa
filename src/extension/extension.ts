import * as vscode from 'vscode';
// First: the service's thread starts while the rest of the bundle loads (early-start.ts).
import { loadBegan } from './early-start';
import type { Host } from '../agent/host';
import { workspaceRootsOf } from '../agent/workspace-roots';
import { DEFAULT_PROVIDER, type HostAction } from '../protocol';
import { ApiKeys } from './api-keys';
import { call } from './backend';
import { CHAT_VIEW_ID, ChatViewProvider } from './chat-view';
import { registerContextFeatures } from './context-commands';
import { createLookup } from './editor-context';
import { COMMANDS, registerCommands, type CommandDeps } from './palette-commands';
import { LoopMonitor } from './diagnostics';
import { createEditorToolSource } from './editor-tools';
import { createTerminalRunner } from './terminal-command';
import { dropEarly } from '../service-thread/early-thread';
import { Hosting, type HostingState } from './hosting';
import { createLanguageModelProvider } from './lm-provider';
import { createLanguageModelToolSource } from './lm-tools';
import { PendingPermissions } from './pending-permissions';
import { answerRequest, EditorPrompts, PROPOSED_SCHEME, ProposedContent, showRequestDiff } from './permission-prompt';
import { offerPortBusyActions } from './port-busy';
import { readSettings, SETTINGS_SECTION } from './settings';
import { StatusBar } from './status-bar';
import { showUndoThreeWay, undoTurnFromPalette } from './undo-turn';
import { openWorktree, reviewChanges } from './review-changes';
import type { PermissionDecision } from '../protocol';

/** What activate() returns: lets tests (and end-to-end checks) see inside. */
export interface RemoteAssistantApi {
  hosting: Hosting;
  statusBar: StatusBar;
  chatView: ChatViewProvider;
  apiKeys: ApiKeys;
  /** activate() -> listening (or attached), in ms; undefined when autoStart is off. */
  activationMs: number | undefined;
}

let active: { hosting: Hosting } | undefined;
const DEFAULT_CHOSEN_KEY = 'remoteAssistant.editorModelsMadeDefault';

export async function activate(context: vscode.ExtensionContext): Promise<RemoteAssistantApi> {
  const began = performance.now();
  const output = vscode.window.createOutputChannel('Remote Assistant');
  context.subscriptions.push(output);
  const log = (line: string) => output.appendLine(`${new Date().toISOString()} ${line}`);

  const apiKeys = new ApiKeys(context.secrets);
  // The keys come from the editor's SecretStorage (a round trip to the workbench) while the service opens:
  // the service takes its first command (a turn may need a key) only once both are done (Hosting's `ready`).
  const keysLoaded = apiKeys.loadAll().catch((error: Error) => log(`API keys could not be read: ${error.message}`));
  const proposed = new ProposedContent();
  const lm = createLanguageModelProvider();
  // File tools work in the window's open folders (those on disk: the extension host runs beside them).
  const openFolders = () => (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
  // The editor hears and answers permission requests as a client (EditorPrompts), in one place.
  const host: Host = {
    languageModels: () => lm,
    workspaceRoots: openFolders,
    apiKey: apiKeys.get,
    terminal: createTerminalRunner(),
  };

  const dataDir = context.globalStorageUri.fsPath;
  const hosting = new Hosting({ dataDir, port: () => readSettings().port, hostServices: host, log, ready: keysLoaded });
  // Read when the service opens (after this): the editor's tools work where the built-in file tools do.
  const toolRoots = () => (hosting.service ? workspaceRootsOf(hosting.service.config.current, host) : openFolders());
  // Other extensions' tools come after every tool of the agent's own: a name clash keeps the agent's.
  host.toolSources = [createEditorToolSource(toolRoots)];
  host.laterToolSources = [createLanguageModelToolSource()];
  active = { hosting };
  // The service's thread keeps a copy of what it reads synchronously (the folders, the keys): sent at each change.
  apiKeys.onChange(() => hosting.service?.hostChanged());
  context.subscriptions.push(vscode.workspace.onDidChangeWorkspaceFolders(() => hosting.service?.hostChanged()));

  const statusBar = new StatusBar();
  const pending = new PendingPermissions();
  pending.on('change', () => statusBar.setPending(pending.count));
  let chatVisible = false;
  const prompts = new EditorPrompts(
    pending,
    () => chatVisible,
    (requestId, decision) => answerRequest(hosting.backend, requestId, decision),
  );
  const showDiff = async (requestId: string) => {
    const request = pending.get(requestId);
    if (!request) throw new Error('that permission request no longer waits');
    await showRequestDiff(request, toolRoots(), proposed);
  };
  const runAction = (action: HostAction, argument?: string) => {
    const commandOf: Partial<Record<HostAction, string>> = { setApiKey: COMMANDS.setApiKey, selectModel: COMMANDS.selectModel, selectProvider: COMMANDS.selectProvider };
    // The chat view's Changes sheet names its conversation: the palette commands, with it chosen.
    const conversationCommandOf: Partial<Record<HostAction, string>> = { reviewChanges: COMMANDS.reviewChanges, openWorktree: COMMANDS.openWorktree };
    if (commandOf[action]) void vscode.commands.executeCommand(commandOf[action]!);
    else if (conversationCommandOf[action] && argument) void vscode.commands.executeCommand(conversationCommandOf[action]!, argument);
    else if (action === 'showDiff' && argument) void showDiff(argument).catch((error: Error) => void vscode.window.showErrorMessage(`Remote Assistant: ${error.message}`));
    else if (action === 'exportConversation' && argument) {
      // `<format>:<conversation_id>` (protocol/bridge.ts): the palette command, with both already chosen.
      const [format, conversationId] = [argument.slice(0, argument.indexOf(':')), argument.slice(argument.indexOf(':') + 1)];
      if ((format === 'markdown' || format === 'json') && conversationId) void vscode.commands.executeCommand(COMMANDS.exportConversation, conversationId, format);
    } else if (action === 'showUndoThreeWay' && argument) {
      void showUndoThreeWay(hosting.backend, argument, toolRoots(), proposed).catch((error: Error) => void vscode.window.showErrorMessage(`Remote Assistant: ${error.message}`));
    } else if (action === 'openLink' && argument && /^https?:\/\//.test(argument)) void vscode.env.openExternal(vscode.Uri.parse(argument));
    else if (action === 'openFile' && argument) {
      const root = vscode.workspace.workspaceFolders?.[0]?.uri;
      if (root) void vscode.window.showTextDocument(vscode.Uri.joinPath(root, argument));
    }
  };
  // Secrets the webview must never see: the service's whole list (the log's) and the keys in SecretStorage.
  const secrets = () => [...(hosting.service?.redactor.secrets() ?? []), ...apiKeys.values()];
  const chatView = new ChatViewProvider(
    context.extensionUri,
    () => ({ backend: hosting.backend, state: hosting.state }),
    runAction,
    secrets,
    (request) => prompts.ownRequest(request),
    createLookup(toolRoots),
  );
  chatView.onDidChangeVisibility((visible) => {
    chatVisible = visible;
    prompts.refresh();
  });
  /** Opens the chat and brings that request's card forward (the first waiting one when none is named). */
  const showInChat = async (requestId?: string) => {
    const request = requestId ? pending.get(requestId) : pending.list()[0];
    await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    if (!request) {
      if (!requestId) void vscode.window.showInformationMessage('Remote Assistant: no permission request waits.');
      return;
    }
    chatView.post({ event: 'editor.show_request', request_id: request.request_id, conversation_id: request.conversation_id });
  };

  const autoStart = readSettings().autoStart;
  // Started as the bundle loaded when the settings then said to host: not wanted now.
  if (!autoStart) dropEarly();
  /** activate() -> listening: taken the moment the service listens (or attaches, or finds its port taken). */
  let activationMs: number | undefined;
  /** The extension's code began loading -> listening (the service's thread starts at that load). */
  let fromLoadMs: number | undefined;
  let serviceMs: number | undefined;
  let serviceSteps: string | undefined;
  /** activate() -> the service whole (its store open: it listens before, see Service.begin). */
  let readyMs: number | undefined;
  const activated = () => {
    if (activationMs !== undefined) return;
    activationMs = Math.round(performance.now() - began);
    fromLoadMs = Math.round(performance.now() - loadBegan);
    serviceMs = hosting.state.state === 'hosting' ? hosting.state.startupMs : undefined;
    serviceSteps = serviceMs === undefined ? undefined : hosting.service?.startSteps;
    hosting.service?.ready.then(
      () => (readyMs ??= Math.round(performance.now() - began)),
      () => undefined,
    );
  };
  const loopMonitor = new LoopMonitor();
  const deps: CommandDeps = {
    hosting,
    dataDir,
    apiKeys,
    host,
    log,
    newConversation: () => chatView.post({ event: 'editor.new_conversation' }),
    showMessage: async (conversationId, messageId) => {
      await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
      chatView.post({ event: 'editor.show_message', conversation_id: conversationId, message_id: messageId });
    },
    loopMonitor,
    activation: () => (activationMs === undefined ? undefined : { ms: activationMs, fromLoadMs, serviceMs, readyMs, serviceSteps }),
    permissions: {
      answer: (requestId, decision) => answerRequest(hosting.backend, requestId, decision as PermissionDecision),
      showInChat,
      showDiff,
    },
    undoTurn: () => undoTurnFromPalette(hosting.backend, toolRoots(), proposed),
    reviewChanges: (conversationId) => reviewChanges(hosting.backend, proposed, conversationId),
    openWorktree: (conversationId) => openWorktree(hosting.backend, conversationId),
  };

  context.subscriptions.push(
    statusBar,
    { dispose: () => pending.dispose() },
    prompts,
    apiKeys,
    chatView,
    loopMonitor,
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chatView, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, proposed),
    ...registerCommands(deps),
    ...registerContextFeatures(chatView),
  );

  hosting.on('backend', (backend) => {
    if (backend) {
      backend.on('config', (config) => statusBar.update(undefined, config));
    }
    statusBar.update(undefined, backend?.config);
    prompts.reset();
    pending.setBackend(backend);
    chatView.backendChanged(backend, hosting.state);
  });
  hosting.on('state', (state: HostingState) => {
    if (autoStart && state.state === 'hosting') activated();
    statusBar.update(state, hosting.backend?.config);
    chatView.stateChanged(state);
    if (state.state === 'port_busy') void offerPortBusyActions(state.port, () => hosting.retryListen());
    if (state.state === 'hosting') void preferEditorModels(hosting, apiKeys, context.globalState, log);
  });
  // Chat extensions register their models some time after startup.
  context.subscriptions.push(vscode.lm.onDidChangeChatModels(() => void preferEditorModels(hosting, apiKeys, context.globalState, log)));

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (!e.affectsConfiguration(SETTINGS_SECTION)) return;
      const settings = readSettings();
      if (e.affectsConfiguration(`${SETTINGS_SECTION}.lanAccess`) && hosting.service) {
        await hosting.service.applyLanAccess(settings.lanAccess).catch((error: Error) => log(`lanAccess: ${error.message}`));
      }
      if ((e.affectsConfiguration(`${SETTINGS_SECTION}.port`) || e.affectsConfiguration(`${SETTINGS_SECTION}.lanAccess`)) && hosting.service) {
        log('settings changed: restarting the service');
        await hosting.restart();
      }
    }),
  );

  if (autoStart) {
    // Activation ends once the service listens (or this window attached): VS Code's own activation
    // figure then leaves out the store's open. The palette's commands and the chat view wait for the
    // open in the service (bounded); a failed open still shows as the error state (Hosting's `whole`).
    const { serving, whole } = hosting.begin();
    await serving;
    activated();
    log(
      `activated in ${activationMs} ms, ${fromLoadMs} ms from the loading of its code (${hosting.state.state}${serviceMs === undefined ? '' : `; the service's lock and listen ${serviceMs} ms of it`})`,
    );
    void whole.then(async () => {
      // Not after deactivate(): a restart would host again.
      const current = () => active?.hosting === hosting && hosting.service;
      if (readSettings().lanAccess && current() && (await hosting.service!.applyLanAccess(true).catch(() => false)) && current()) {
        // Listening on loopback only was not yet what the settings ask for: the service moves to the LAN.
        log('lanAccess: restarting the service on every interface');
        await hosting.restart();
      }
    });
  } else {
    statusBar.update({ state: 'stopped' });
  }
  return { hosting, statusBar, chatView, apiKeys, activationMs };
}

export async function deactivate(): Promise<void> {
  // A thread started as the extension loaded and never taken (activate() failed before hosting) ends too.
  dropEarly();
  const current = active;
  active = undefined;
  await current?.hosting.stop();
}

/**
 * The editor's own models are the default when the user configured no other provider: still the
 * initial `openai` with no key, no endpoint, and the editor has models.
 */
async function preferEditorModels(hosting: Hosting, apiKeys: ApiKeys, memento: vscode.Memento, log: (line: string) => void): Promise<void> {
  const config = hosting.service?.config.current;
  // Once only: a user who later picks openai again keeps it.
  if (memento.get<boolean>(DEFAULT_CHOSEN_KEY)) return;
  if (!config || config.provider !== DEFAULT_PROVIDER || config.api_key || config.base_url || apiKeys.has(DEFAULT_PROVIDER)) return;
  try {
    const models = await vscode.lm.selectChatModels();
    if (!models[0] || !hosting.backend) return;
    await call(hosting.backend, { type: 'update_config', config: { provider: 'vscode', model: models[0].id } });
    await memento.update(DEFAULT_CHOSEN_KEY, true);
    log(`using the editor's language models (${models[0].id}) as no other provider is configured`);
  } catch (error) {
    log(`vscode.lm unavailable: ${(error as Error).message}`);
  }
}
