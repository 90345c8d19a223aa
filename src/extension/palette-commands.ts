import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as vscode from 'vscode';
import type { Host } from '../agent/host';
import { createProviderResolver } from '../agent/provider-resolver';
import { parseConfigText } from '../config/config-file';
import { CONFIG_FILE_NAME, LOG_FILE_NAME } from '../platform/paths';
import { isProviderName, KEYED_PROVIDERS, PROVIDER_NAMES, PROVIDERS, type ServiceConfig } from '../protocol';
import type { ApiKeys } from './api-keys';
import { describeFigures, type LoopMonitor } from './diagnostics';
import { call, type Backend, type PublicConfig } from './backend';
import { CHAT_VIEW_ID } from './chat-view';
import { showConnectionInfo } from './connection-info';
import type { Hosting } from './hosting';
import { readSettings, SETTINGS_SECTION } from './settings';

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
  startService: 'remoteAssistant.startService',
  stopService: 'remoteAssistant.stopService',
  restartService: 'remoteAssistant.restartService',
  openConfig: 'remoteAssistant.openConfig',
  showLog: 'remoteAssistant.showLog',
  measureResponsiveness: 'remoteAssistant.measureResponsiveness',
} as const;

export interface CommandDeps {
  hosting: Hosting;
  dataDir: string;
  apiKeys: ApiKeys;
  host: Host;
  /** Tells the chat view(s) to start a new conversation. */
  newConversation: () => void;
  log: (line: string) => void;
  loopMonitor: LoopMonitor;
  /** activate() -> service listening, once known. */
  activationMs: () => number | undefined;
}

const MODES: { label: PublicConfig['permission_mode']; description: string }[] = [
  { label: 'ask', description: 'Ask before each tool call (here, or on any connected client)' },
  { label: 'allow', description: 'Run every tool without asking' },
  { label: 'deny', description: 'Never run a tool' },
];
/** The provider picker's items: every registered provider (src/protocol/providers.ts). */
export const PROVIDER_ITEMS = PROVIDER_NAMES.map((name) => ({ label: name, description: PROVIDERS[name].label }));

function backendOf(deps: CommandDeps): Backend {
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
  const picked = await vscode.window.showQuickPick(PROVIDER_ITEMS.map((p) => ({ ...p, detail: p.label === current ? 'current' : undefined })), { title: 'Remote Assistant: Provider' });
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
  const value = await vscode.window.showInputBox({ title: 'Remote Assistant: Temperature', prompt: '0 (focused) to 2 (creative)', value: String(config.temperature), validateInput: validateTemperature });
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
    prompt: 'Stored in the editor\'s secret storage. Leave empty to remove it.',
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
      description: Object.entries(t.parameters).map(([n, type]) => `${n}: ${type}`).join(', ') || 'no parameters',
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

/** First run: start measuring the event loop; second run: report (output channel and a notification). */
export async function measureResponsiveness(deps: CommandDeps): Promise<void> {
  const figures = deps.loopMonitor.stop();
  if (!figures) {
    deps.loopMonitor.start();
    deps.log('responsiveness: measuring the extension host event loop');
    void vscode.window.showInformationMessage('Remote Assistant: measuring responsiveness. Run "Measure Responsiveness" again to see the figures.');
    return;
  }
  const text = describeFigures(figures, deps.activationMs());
  deps.log(`responsiveness: ${text}`);
  void vscode.window.showInformationMessage(`Remote Assistant responsiveness: ${text}`);
}

async function openFile(file: string): Promise<void> {
  await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(vscode.Uri.file(file)), { preview: false });
}

/** Registers every command; errors are shown, never thrown into the editor. */
export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
  const guarded = (id: string, run: () => Promise<unknown> | unknown) =>
    vscode.commands.registerCommand(id, async () => {
      try {
        await run();
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
    guarded(COMMANDS.startService, () => deps.hosting.start()),
    guarded(COMMANDS.stopService, () => deps.hosting.stop()),
    guarded(COMMANDS.restartService, () => deps.hosting.restart()),
    guarded(COMMANDS.openConfig, () => openFile(join(deps.dataDir, CONFIG_FILE_NAME))),
    guarded(COMMANDS.showLog, () => openFile(join(deps.dataDir, LOG_FILE_NAME))),
    guarded(COMMANDS.measureResponsiveness, () => measureResponsiveness(deps)),
  ];
}

export { SETTINGS_SECTION };
