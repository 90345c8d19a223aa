import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { Host } from '../agent/host';
import { createProviderResolver } from '../agent/provider-resolver';
import { parseConfigText } from '../config/config-file';
import { CONFIG_FILE_NAME, LOG_FILE_NAME } from '../platform/paths';
import { isProviderName, KEYED_PROVIDERS, PROVIDER_NAMES, PROVIDERS, type PermissionRules, type ServiceConfig } from '../protocol';
import type { ApiKeys } from './api-keys';
import { describeFigures, type Activation, type LoopMonitor } from './diagnostics';
import { call, type Backend, type PublicConfig } from './backend';
import { CHAT_VIEW_ID } from './chat-view';
import { showConnectionInfo } from './connection-info';
import { manageDevices } from './manage-devices';
import { showActivity } from './show-activity';
import { compactConversation, exportConversation, searchHistory } from './history-commands';
import type { Hosting } from './hosting';
import type { HostedService } from '../service-thread/hosted-service';
import { PROMPT_COMMANDS } from './permission-prompt';
import { readSettings, SETTINGS_SECTION } from './settings';
import { SHOW_PENDING_COMMAND } from './status-bar';

export const COMMANDS = {
  openChat: 'remoteAssistant.openChat',
  newConversation: 'remoteAssistant.newConversation',
  setPermissionMode: 'remoteAssistant.setPermissionMode',
  cyclePermissionMode: 'remoteAssistant.cyclePermissionMode',
  selectProvider: 'remoteAssistant.selectProvider',
  selectModel: 'remoteAssistant.selectModel',
  setTemperature: 'remoteAssistant.setTemperature',
  setApiKey: 'remoteAssistant.setApiKey',
  listTools: 'remoteAssistant.listTools',
  showConnectionInfo: 'remoteAssistant.showConnectionInfo',
  manageDevices: 'remoteAssistant.manageDevices',
  showActivity: 'remoteAssistant.showActivity',
  startService: 'remoteAssistant.startService',
  stopService: 'remoteAssistant.stopService',
  restartService: 'remoteAssistant.restartService',
  openConfig: 'remoteAssistant.openConfig',
  showLog: 'remoteAssistant.showLog',
  measureResponsiveness: 'remoteAssistant.measureResponsiveness',
  editPermissionRules: 'remoteAssistant.editPermissionRules',
  sendTestNotification: 'remoteAssistant.sendTestNotification',
  searchHistory: 'remoteAssistant.searchHistory',
  exportConversation: 'remoteAssistant.exportConversation',
  compactConversation: 'remoteAssistant.compactConversation',
  undoTurn: 'remoteAssistant.undoTurn',
  reviewChanges: 'remoteAssistant.reviewChanges',
  openWorktree: 'remoteAssistant.openWorktree',
} as const;

export interface CommandDeps {
  hosting: Hosting;
  dataDir: string;
  apiKeys: ApiKeys;
  host: Host;
  /** Tells the chat view(s) to start a new conversation. */
  newConversation: () => void;
  /** Opens the chat view on a conversation, scrolled to one of its messages (a search hit). */
  showMessage: (conversationId: string, messageId: string) => Promise<void>;
  log: (line: string) => void;
  loopMonitor: LoopMonitor;
  /** activate() -> service listening, once known. */
  activation: () => Activation | undefined;
  /** Waiting permission requests: answer one, show it in the chat (the first when no id), show its diff. */
  permissions: {
    answer(requestId: string, decision: string): Promise<void>;
    showInChat(requestId?: string): Promise<void>;
    showDiff(requestId: string): Promise<void>;
  };
  /** "Undo a Turn" (extension/undo-turn.ts). */
  undoTurn: () => Promise<void>;
  /** "Review Changes" and "Open the Worktree in a New Window" (extension/review-changes.ts); the chat view's menu names the conversation. */
  reviewChanges: (conversationId?: string) => Promise<void>;
  openWorktree: (conversationId?: string) => Promise<void>;
}

const MODES: { label: PublicConfig['permission_mode']; description: string }[] = [
  { label: 'ask', description: 'Ask before each tool call (here, or on any connected client)' },
  { label: 'allow', description: 'Run every tool without asking' },
  { label: 'deny', description: 'Never run a tool' },
];
/** The provider picker's items: every registered provider (src/protocol/providers.ts). */
export const PROVIDER_ITEMS = PROVIDER_NAMES.map((name) => ({ label: name, description: PROVIDERS[name].label }));

function backendOf(deps: Pick<CommandDeps, 'hosting'>): Backend {
  const backend = deps.hosting.backend;
  if (!backend) throw new Error('the service is not running (Remote Assistant: Start Service)');
  return backend;
}

/** Config changes go through `update_config`, so every client gets `config.changed`. */
export async function updateConfig(deps: CommandDeps, config: Record<string, unknown>): Promise<string[]> {
  return (await call(backendOf(deps), { type: 'update_config', config })).updated_fields;
}

async function currentConfig(deps: CommandDeps): Promise<PublicConfig> {
  return backendOf(deps).config ?? (await call(backendOf(deps), { type: 'get_config' }));
}

/** The whole service.json (the provider's key may be there), read by any window. */
async function fileConfig(dataDir: string): Promise<ServiceConfig> {
  const file = join(dataDir, CONFIG_FILE_NAME);
  return parseConfigText(file, await readFile(file, 'utf8')).config;
}

export async function setPermissionMode(deps: CommandDeps): Promise<void> {
  const current = (await currentConfig(deps)).permission_mode;
  const picked = await vscode.window.showQuickPick(
    MODES.map((m) => ({ ...m, picked: m.label === current, detail: m.label === current ? 'current' : undefined })),
    { title: 'Remote Assistant: Permission Mode', placeHolder: `Current: ${current}` },
  );
  if (picked) await updateConfig(deps, { permission_mode: picked.label });
}

export async function cyclePermissionMode(deps: CommandDeps): Promise<void> {
  const order = MODES.map((m) => m.label);
  const current = (await currentConfig(deps)).permission_mode;
  await updateConfig(deps, { permission_mode: order[(order.indexOf(current) + 1) % order.length] });
}

async function selectProvider(deps: CommandDeps): Promise<void> {
  const current = (await currentConfig(deps)).provider;
  const picked = await vscode.window.showQuickPick(
    PROVIDER_ITEMS.map((p) => ({ ...p, detail: p.label === current ? 'current' : undefined })),
    { title: 'Remote Assistant: Provider' },
  );
  if (picked) await updateConfig(deps, { provider: picked.label });
}

async function listModels(deps: CommandDeps): Promise<string[]> {
  const config = await fileConfig(deps.dataDir);
  const provider = createProviderResolver(deps.host)(config);
  if (!provider.listModels) return [];
  const signal = AbortSignal.timeout(8_000);
  return provider.listModels(signal);
}

async function selectModel(deps: CommandDeps): Promise<void> {
  const config = await currentConfig(deps);
  const OTHER = 'Enter a model name…';
  const models = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Listing models' }, () =>
    listModels(deps).catch((error: Error) => {
      deps.log(`listing models failed: ${error.message}`);
      return [] as string[];
    }),
  );
  let model: string | undefined;
  if (models.length > 0) {
    const picked = await vscode.window.showQuickPick([...models.map((m) => ({ label: m, description: m === config.model ? 'current' : undefined })), { label: OTHER }], {
      title: `Remote Assistant: Model (${config.provider})`,
    });
    if (!picked) return;
    model = picked.label === OTHER ? undefined : picked.label;
    if (model) return void (await updateConfig(deps, { model }));
  }
  model = await vscode.window.showInputBox({ title: `Remote Assistant: Model (${config.provider})`, value: config.model, validateInput: (v) => (v.trim() ? undefined : 'Enter a model name') });
  if (model?.trim()) await updateConfig(deps, { model: model.trim() });
}

export function validateTemperature(value: string): string | undefined {
  const n = Number(value);
  return value.trim() !== '' && Number.isFinite(n) && n >= 0 && n <= 2 ? undefined : 'Enter a number from 0 to 2';
}

async function setTemperature(deps: CommandDeps): Promise<void> {
  const config = await currentConfig(deps);
  const value = await vscode.window.showInputBox({
    title: 'Remote Assistant: Temperature',
    prompt: '0 (focused) to 2 (creative)',
    value: String(config.temperature),
    validateInput: validateTemperature,
  });
  if (value !== undefined) await updateConfig(deps, { temperature: Number(value) });
}

/** The key goes to SecretStorage only: never to service.json, never to the webview. */
export async function setApiKey(deps: CommandDeps): Promise<void> {
  const current = deps.hosting.backend?.config?.provider;
  let provider: string | undefined = isProviderName(current) && PROVIDERS[current].needsKey ? current : undefined;
  if (!provider) {
    const picked = await vscode.window.showQuickPick(KEYED_PROVIDERS, { title: 'Remote Assistant: API key for which provider?' });
    if (!picked) return;
    provider = picked;
  }
  const value = await vscode.window.showInputBox({
    title: `Remote Assistant: ${provider} API key`,
    prompt: "Stored in the editor's secret storage. Leave empty to remove it.",
    password: true,
    ignoreFocusOut: true,
  });
  if (value === undefined) return;
  await deps.apiKeys.set(provider, value.trim() || undefined);
  void vscode.window.showInformationMessage(value.trim() ? `Remote Assistant: ${provider} API key saved.` : `Remote Assistant: ${provider} API key removed.`);
}

async function listTools(deps: CommandDeps): Promise<void> {
  const { tools } = await call(backendOf(deps), { type: 'list_tools' });
  await vscode.window.showQuickPick(
    tools.map((t) => ({
      label: t.name,
      description: `${t.from === 'vscode' ? '$(extensions) from VS Code · ' : ''}${
        Object.entries(t.parameters)
          .map(([n, type]) => `${n}: ${type}`)
          .join(', ') || 'no parameters'
      }`,
      detail: t.description,
    })),
    { title: `Remote Assistant: ${tools.length} tools`, matchOnDescription: true, matchOnDetail: true },
  );
}

async function connectionInfo(deps: CommandDeps): Promise<void> {
  const state = deps.hosting.state;
  const port = state.state === 'hosting' || state.state === 'client' || state.state === 'port_busy' ? state.port : readSettings().port;
  const config = await fileConfig(deps.dataDir);
  await showConnectionInfo({ port, token: config.auth_token ?? '', lanAccess: readSettings().lanAccess }, deps.hosting.backend);
}

/** The CPU profile beside the measurement, when the test environment asks for one (see cpu-profile.ts). */
let profiling: Promise<{ stop(): Promise<string> } | undefined> | undefined;
/** The service whose thread's loop is being measured beside the extension host's. */
let measured: HostedService | undefined;

/** First run: start measuring the event loop; second run: report (output channel and a notification). */
export async function measureResponsiveness(deps: CommandDeps): Promise<void> {
  const figures = deps.loopMonitor.stop();
  if (!figures) {
    deps.loopMonitor.start();
    // The service's own loop too, on its thread: the one that answers the sockets (a restarted one is not measured).
    measured = deps.hosting.service;
    measured?.startLoopMonitor();
    // Test-only (RA_E2E_CPU_PROFILE in the editor's environment): the module is not even loaded otherwise.
    if (process.env.RA_E2E_CPU_PROFILE) profiling = import('./cpu-profile').then(({ CpuProfile }) => CpuProfile.start());
    deps.log('responsiveness: measuring the extension host event loop');
    void vscode.window.showInformationMessage('Remote Assistant: measuring responsiveness. Run "Measure Responsiveness" again to see the figures.');
    return;
  }
  const serviceLoop = await measured?.stopLoopMonitor();
  measured = undefined;
  const text = describeFigures(figures, deps.activation(), serviceLoop?.figures);
  if (serviceLoop?.crossings) deps.log(`responsiveness: messages across the service thread's port meanwhile: ${serviceLoop.crossings}`);
  const profile = await profiling?.then((p) => p?.stop()).catch((error: unknown) => `not written: ${String(error)}`);
  profiling = undefined;
  if (profile) deps.log(`responsiveness: CPU profile ${profile}`);
  deps.log(`responsiveness: ${text}`);
  void vscode.window.showInformationMessage(`Remote Assistant responsiveness: ${text}`);
}

/** The data of an ok envelope, or the service's error as an Error (also for commands this service may not know yet). */
async function ask(deps: Pick<CommandDeps, 'hosting'>, frame: Record<string, unknown>): Promise<Record<string, unknown>> {
  const answer = await backendOf(deps).request(frame);
  if (answer.status !== 'ok') throw new Error(answer.error || 'the service refused the command');
  return (answer.data ?? {}) as Record<string, unknown>;
}

function rulesOf(config: Record<string, unknown>): PermissionRules {
  const rules = config.permission_rules as Partial<PermissionRules> | undefined;
  const strings = (list: unknown) => (Array.isArray(list) ? list.filter((r): r is string => typeof r === 'string') : []);
  return { allow: strings(rules?.allow), deny: strings(rules?.deny) };
}

/** Rule syntax as the service checks it (`tool` or `tool:subject glob`); the service has the last word. */
export function validateRule(value: string): string | undefined {
  const rule = value.trim();
  if (!rule) return 'Enter a rule, e.g. run_command:npm test or read_file';
  if (rule.length > 2000) return 'A rule is at most 2000 characters';
  if (!/^[A-Za-z0-9_*?.-]+(:|$)/.test(rule)) return 'Start with a tool name (a glob such as mcp_* works), then optionally :subject';
  return undefined;
}

/**
 * "Edit Permission Rules": every allow and deny rule (get_config `permission_rules`) in one list;
 * picking one offers to remove it; the last rows add one. The whole object goes back through
 * update_config (the owner's command: it replaces the rules all or nothing).
 */
export async function editPermissionRules(deps: Pick<CommandDeps, 'hosting'>): Promise<void> {
  const rules = rulesOf(await ask(deps, { type: 'get_config' }));
  type Row = vscode.QuickPickItem & { list?: keyof PermissionRules; rule?: string; add?: keyof PermissionRules };
  const rows: Row[] = [
    ...rules.deny.map((rule) => ({ label: rule, description: 'deny', list: 'deny' as const, rule })),
    ...rules.allow.map((rule) => ({ label: rule, description: 'allow', list: 'allow' as const, rule })),
    { label: '$(add) Add an allow rule…', add: 'allow' },
    { label: '$(add) Add a deny rule…', add: 'deny' },
  ];
  const picked = await vscode.window.showQuickPick(rows, {
    title: 'Remote Assistant: Permission Rules',
    placeHolder: `${rules.deny.length} deny, ${rules.allow.length} allow (deny wins). Pick a rule to remove it, or add one.`,
  });
  if (!picked) return;
  const next: PermissionRules = { allow: [...rules.allow], deny: [...rules.deny] };
  if (picked.add) {
    const list = picked.add;
    const value = await vscode.window.showInputBox({
      title: `Remote Assistant: new ${list} rule`,
      prompt: 'tool or tool:subject, globs allowed (e.g. run_command:npm test, write_file:src/*, mcp_*); \\* matches a literal *',
      validateInput: validateRule,
    });
    if (value === undefined) return;
    if (next[list].includes(value.trim())) return;
    next[list].push(value.trim());
  } else if (picked.list && picked.rule !== undefined) {
    const confirm = await vscode.window.showQuickPick([{ label: `Remove this ${picked.list} rule`, detail: picked.rule }, { label: 'Keep it' }], { title: 'Remote Assistant: Permission Rules' });
    if (!confirm?.label.startsWith('Remove')) return;
    next[picked.list] = next[picked.list].filter((r) => r !== picked.rule);
  }
  await ask(deps, { type: 'update_config', config: { permission_rules: next } });
}

/**
 * "Send Test Notification": push_test to every subscribed phone; one line per device (by its name),
 * or that no phone is subscribed yet (and how to subscribe).
 */
export async function sendTestNotification(deps: Pick<CommandDeps, 'hosting'>): Promise<void> {
  const { devices } = (await ask(deps, { type: 'list_push_devices' })) as { devices?: { device_id: string; device_name: string }[] };
  const { results } = (await ask(deps, { type: 'push_test' })) as { results?: { device_id: string; ok: boolean; status: number | null; error?: string }[] };
  if (!results?.length) {
    void vscode.window.showInformationMessage('Remote Assistant: no phone is subscribed to notifications. Open the page on your phone and turn notifications on.');
    return;
  }
  const name = (id: string) => devices?.find((d) => d.device_id === id)?.device_name ?? id;
  const lines = results.map((r) => (r.ok ? `${name(r.device_id)}: sent` : `${name(r.device_id)}: failed (${r.status ?? 'no answer'}${r.error ? `, ${r.error}` : ''})`));
  const text = `Remote Assistant test notification: ${lines.join('; ')}`;
  if (results.every((r) => r.ok)) void vscode.window.showInformationMessage(text);
  else void vscode.window.showWarningMessage(text);
}

async function openFile(file: string): Promise<void> {
  await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(vscode.Uri.file(file)), { preview: false });
}

/** Registers every command; errors are shown, never thrown into the editor. */
export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
  const guarded = (id: string, run: (...args: any[]) => Promise<unknown> | unknown) =>
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        await run(...args);
      } catch (error) {
        deps.log(`${id} failed: ${(error as Error).message}`);
        void vscode.window.showErrorMessage(`Remote Assistant: ${(error as Error).message}`);
      }
    });
  return [
    guarded(COMMANDS.openChat, () => vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`)),
    guarded(COMMANDS.newConversation, async () => {
      await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
      deps.newConversation();
    }),
    guarded(COMMANDS.setPermissionMode, () => setPermissionMode(deps)),
    guarded(COMMANDS.cyclePermissionMode, () => cyclePermissionMode(deps)),
    guarded(COMMANDS.selectProvider, () => selectProvider(deps)),
    guarded(COMMANDS.selectModel, () => selectModel(deps)),
    guarded(COMMANDS.setTemperature, () => setTemperature(deps)),
    guarded(COMMANDS.setApiKey, () => setApiKey(deps)),
    guarded(COMMANDS.listTools, () => listTools(deps)),
    guarded(COMMANDS.showConnectionInfo, () => connectionInfo(deps)),
    guarded(COMMANDS.manageDevices, () => manageDevices(deps.hosting.backend)),
    guarded(COMMANDS.showActivity, () => showActivity(deps.hosting.backend)),
    guarded(COMMANDS.startService, () => deps.hosting.start()),
    guarded(COMMANDS.stopService, () => deps.hosting.stop()),
    guarded(COMMANDS.restartService, () => deps.hosting.restart()),
    guarded(COMMANDS.openConfig, () => openFile(join(deps.dataDir, CONFIG_FILE_NAME))),
    guarded(COMMANDS.showLog, () => openFile(join(deps.dataDir, LOG_FILE_NAME))),
    guarded(COMMANDS.measureResponsiveness, () => measureResponsiveness(deps)),
    guarded(COMMANDS.editPermissionRules, () => editPermissionRules(deps)),
    guarded(COMMANDS.sendTestNotification, () => sendTestNotification(deps)),
    guarded(COMMANDS.searchHistory, () => searchHistory(deps.hosting.backend, (hit) => deps.showMessage(hit.conversation_id, hit.message_id))),
    guarded(COMMANDS.exportConversation, (conversationId?: string, format?: 'markdown' | 'json') => exportConversation(deps.hosting.backend, conversationId, format)),
    guarded(COMMANDS.compactConversation, (conversationId?: string) => compactConversation(deps.hosting.backend, conversationId)),
    guarded(COMMANDS.undoTurn, () => deps.undoTurn()),
    guarded(COMMANDS.reviewChanges, (id?: unknown) => deps.reviewChanges(typeof id === 'string' ? id : undefined)),
    guarded(COMMANDS.openWorktree, (id?: unknown) => deps.openWorktree(typeof id === 'string' ? id : undefined)),
    guarded(SHOW_PENDING_COMMAND, () => deps.permissions.showInChat()),
    guarded(PROMPT_COMMANDS.answer, (requestId: string, decision: string) => deps.permissions.answer(requestId, decision)),
    guarded(PROMPT_COMMANDS.showInChat, (requestId: string) => deps.permissions.showInChat(requestId)),
    guarded(PROMPT_COMMANDS.showDiff, (requestId: string) => deps.permissions.showDiff(requestId)),
  ];
}

export { SETTINGS_SECTION };
