/**
 * A test double of the `vscode` module: enough of the API for src/extension/ to run in plain Node.
 * `installVscodeDouble()` makes `require('vscode')` resolve here; `testing` lets a test answer
 * dialogs, read what was shown, change settings and drive webviews.
 *
 *   installVscodeDouble();
 *   const { activate } = await import('../src/extension/extension');
 *   testing.answers.warning.push('Allow');
 */
import { spawn, type ChildProcess } from 'node:child_process';
import Module from 'node:module';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { globToRegExp } from '../../src/agent/tools/glob';
import * as nodePath from 'node:path';

type Listener<T> = (e: T) => unknown;

export class Disposable {
  constructor(private readonly fn: () => void = () => undefined) {}
  static from(...items: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => items.forEach((i) => i.dispose()));
  }
  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private listeners = new Set<Listener<T>>();
  event = (listener: Listener<T>): Disposable => {
    this.listeners.add(listener);
    return new Disposable(() => this.listeners.delete(listener));
  };
  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
    readonly query = '',
    readonly fragment = '',
  ) {}
  static file(p: string): Uri {
    return new Uri('file', nodePath.resolve(p));
  }
  static parse(value: string): Uri {
    const u = new URL(value);
    return new Uri(u.protocol.slice(0, -1), u.pathname, u.search.slice(1), u.hash.slice(1));
  }
  static from(parts: { scheme: string; path?: string; query?: string; fragment?: string }): Uri {
    return new Uri(parts.scheme, parts.path ?? '', parts.query ?? '', parts.fragment ?? '');
  }
  static joinPath(base: Uri, ...segments: string[]): Uri {
    return new Uri(base.scheme, nodePath.posix.join(base.path, ...segments));
  }
  get fsPath(): string {
    return this.path;
  }
  with(change: { scheme?: string; path?: string }): Uri {
    return new Uri(change.scheme ?? this.scheme, change.path ?? this.path);
  }
  toString(): string {
    return `${this.scheme}://${this.path}`;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}
export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: number | Position, b: number | Position, c?: number, d?: number) {
    this.start = typeof a === 'number' ? new Position(a, b as number) : a;
    this.end = typeof a === 'number' ? new Position(c!, d!) : (b as Position);
  }
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}
export class Selection extends Range {
  constructor(
    readonly anchor: Position,
    readonly active: Position,
  ) {
    super(anchor, active);
  }
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}
export enum ViewColumn {
  Active = -1,
  One = 1,
}
export enum TextEditorRevealType {
  Default = 0,
  InCenter = 1,
  InCenterIfOutsideViewport = 2,
}
export enum ConfigurationTarget {
  Global = 1,
  Workspace = 2,
}
export enum ProgressLocation {
  Window = 10,
  Notification = 15,
}
export enum QuickPickItemKind {
  Separator = -1,
  Default = 0,
}
export enum DiagnosticSeverity {
  Error = 0,
  Warning = 1,
}

export class CancellationError extends Error {}
export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<void>();
  readonly token = { isCancellationRequested: false, onCancellationRequested: this.emitter.event };
  cancel(): void {
    if (this.token.isCancellationRequested) return;
    this.token.isCancellationRequested = true;
    this.emitter.fire();
  }
  dispose(): void {}
}

export class LanguageModelTextPart {
  constructor(readonly value: string) {}
}
export class LanguageModelToolCallPart {
  constructor(
    readonly callId: string,
    readonly name: string,
    readonly input: object,
  ) {}
}
export class LanguageModelToolResultPart {
  constructor(
    readonly callId: string,
    readonly content: unknown[],
  ) {}
}
export class LanguageModelChatMessage {
  constructor(
    readonly role: 'user' | 'assistant',
    readonly content: unknown,
  ) {}
  static User(content: unknown): LanguageModelChatMessage {
    return new LanguageModelChatMessage('user', content);
  }
  static Assistant(content: unknown): LanguageModelChatMessage {
    return new LanguageModelChatMessage('assistant', content);
  }
}
export class LanguageModelToolResult {
  constructor(readonly content: unknown[]) {}
}
export class LanguageModelError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

// ---- The parts tests control and inspect ----

export interface ShownMessage {
  kind: 'info' | 'warning' | 'error';
  message: string;
  options?: unknown;
  items: string[];
}

/** A post to a webview as the page takes it: a batch (`{kind: 'batch', messages}`, TickBatch) is its messages, in order. */
export function unbatched(message: unknown): unknown[] {
  const batch = message as { kind?: string; messages?: unknown[] } | null;
  return batch?.kind === 'batch' && Array.isArray(batch.messages) ? batch.messages : [message];
}

/** A fake webview (view or panel): what the extension posts, and a way to send it UI messages. */
export class FakeWebview {
  options: Record<string, unknown> = {};
  html = '';
  readonly cspSource = 'vscode-resource:';
  /** What the page was told, one message each: a batch (`{kind: 'batch'}`, TickBatch) unpacked as the page does. */
  readonly posted: unknown[] = [];
  /** How many postMessage calls that took (each one of VS Code's RPC messages). */
  posts = 0;
  private readonly receive = new EventEmitter<unknown>();
  onDidReceiveMessage = this.receive.event;
  asWebviewUri(uri: Uri): Uri {
    return uri.with({ scheme: 'vscode-webview-resource' });
  }
  /** Set by a test that runs the real page (in a browser): every posted message, as it is posted. */
  onPost: ((message: unknown) => void) | undefined;
  async postMessage(message: unknown): Promise<boolean> {
    // What crosses postMessage is structured-cloned: keep a copy, as the webview would see it.
    this.posts += 1;
    this.posted.push(...unbatched(structuredClone(message)));
    this.onPost?.(structuredClone(message));
    return true;
  }
  /** The UI sends a message to the extension. */
  fromUi(message: unknown): void {
    this.receive.fire(message);
  }
}

/** window.createQuickPick's object: a test types (`type`), waits for items and accepts one (`accept`). */
export class FakeQuickPick<T extends { label: string }> {
  title = '';
  placeholder = '';
  value = '';
  busy = false;
  visible = false;
  disposed = false;
  matchOnDescription = false;
  matchOnDetail = false;
  items: T[] = [];
  /** The row with the keyboard focus (VS Code moves it to the first row whenever `items` is set). */
  activeItems: T[] = [];
  selectedItems: T[] = [];
  private readonly valueEmitter = new EventEmitter<string>();
  private readonly acceptEmitter = new EventEmitter<void>();
  private readonly hideEmitter = new EventEmitter<void>();
  onDidChangeValue = this.valueEmitter.event;
  onDidAccept = this.acceptEmitter.event;
  onDidHide = this.hideEmitter.event;
  show(): void {
    this.visible = true;
  }
  hide(): void {
    if (!this.visible) return;
    this.visible = false;
    this.hideEmitter.fire();
  }
  dispose(): void {
    this.disposed = true;
  }
  /** The user types: the whole value after the keystroke. */
  type(value: string): void {
    this.value = value;
    this.valueEmitter.fire(value);
  }
  /** The user picks the item at `index` and presses Enter. */
  accept(index: number): void {
    this.selectedItems = [this.items[index]];
    this.acceptEmitter.fire();
  }
}

export class FakeWebviewView {
  readonly webview = new FakeWebview();
  visible = true;
  private readonly disposeEmitter = new EventEmitter<void>();
  onDidDispose = this.disposeEmitter.event;
  private readonly visibilityEmitter = new EventEmitter<void>();
  onDidChangeVisibility = this.visibilityEmitter.event;
  /** The user hides or shows the view (another container, the side bar closed...). */
  setVisible(visible: boolean): void {
    this.visible = visible;
    this.visibilityEmitter.fire();
  }
  dispose(): void {
    this.disposeEmitter.fire();
  }
}

export class FakeSecretStorage {
  readonly values = new Map<string, string>();
  private readonly emitter = new EventEmitter<{ key: string }>();
  onDidChange = this.emitter.event;
  async get(key: string): Promise<string | undefined> {
    return this.values.get(key);
  }
  async store(key: string, value: string): Promise<void> {
    this.values.set(key, value);
    this.emitter.fire({ key });
  }
  async delete(key: string): Promise<void> {
    this.values.delete(key);
    this.emitter.fire({ key });
  }
}

type Answer<T> = T | ((...args: any[]) => T | Promise<T>);

function createTesting() {
  return {
    settings: new Map<string, unknown>(),
    configChanged: new EventEmitter<{ affectsConfiguration(section: string): boolean }>(),
    /** Fire after changing `workspaceFolders` (VS Code's onDidChangeWorkspaceFolders). */
    foldersChanged: new EventEmitter<unknown>(),
    commands: new Map<string, (...args: unknown[]) => unknown>(),
    executed: [] as { command: string; args: unknown[] }[],
    messages: [] as ShownMessage[],
    /** Answers, in order, for the next dialogs; a function gets the dialog's arguments. Empty: dismissed (undefined). */
    answers: {
      info: [] as Answer<string | undefined>[],
      warning: [] as Answer<string | undefined>[],
      error: [] as Answer<string | undefined>[],
      inputBox: [] as Answer<string | undefined>[],
      quickPick: [] as Answer<any>[],
      saveDialog: [] as Answer<Uri | undefined>[],
    },
    /** Every window.createQuickPick, in order. */
    createdQuickPicks: [] as FakeQuickPick<any>[],
    saveDialogs: [] as Record<string, unknown>[],
    inputBoxes: [] as Record<string, unknown>[],
    quickPicks: [] as { items: any[]; options: unknown }[],
    statusBarItems: [] as any[],
    viewProviders: new Map<string, { resolveWebviewView(view: FakeWebviewView, ...rest: unknown[]): unknown }>(),
    panels: [] as { viewType: string; title: string; webview: FakeWebview }[],
    outputLines: [] as string[],
    clipboard: '',
    chatModels: [] as any[],
    chatModelsChanged: new EventEmitter<void>(),
    /** What `vscode.lm.tools` lists (other extensions' tools); `invoke` answers `vscode.lm.invokeTool`. */
    lmTools: [] as { name: string; description: string; inputSchema?: object; tags: string[]; invoke(input: object): unknown }[],
    /** Fire as VS Code does when an extension is installed, removed, enabled or disabled (vscode.extensions.onDidChange). */
    extensionsChanged: new EventEmitter<void>(),
    activeEditorChanged: new EventEmitter<unknown>(),
    documentChanged: new EventEmitter<{ document: unknown }>(),
    /** Makes `editor` the active text editor and fires onDidChangeActiveTextEditor, as VS Code does on a switch. */
    setActiveEditor(editor: unknown): void {
      window.activeTextEditor = editor;
      this.activeEditorChanged.fire(editor);
    },
    /** Every `vscode.lm.invokeTool`, in order. */
    invokedTools: [] as { name: string; input: object }[],
    workspaceFolders: undefined as { uri: Uri; name: string; index: number }[] | undefined,
    terminals: [] as FakeTerminal[],
    /** Whether new terminals get shell integration (reported on the next tick, as VS Code does later). */
    shellIntegration: true,
    shellIntegrationChanged: new EventEmitter<{ terminal: FakeTerminal }>(),
    shellExecutionEnded: new EventEmitter<{ terminal: FakeTerminal; execution: unknown; exitCode: number | undefined }>(),
    terminalClosed: new EventEmitter<FakeTerminal>(),
    /** Every window.withProgress: its options, the messages reported, whether its task settled (the notification closed). */
    progress: [] as { options: { location?: unknown; title?: string; cancellable?: boolean }; messages: string[]; done: boolean; cancel(): void }[],
    /** Text document content providers by scheme. */
    contentProviders: new Map<string, { provideTextDocumentContent(uri: Uri): string | Promise<string> }>(),
    /** Resolves a view with this id the way VS Code does when the user opens it. */
    async openView(id: string): Promise<FakeWebviewView> {
      const provider = this.viewProviders.get(id);
      if (!provider) throw new Error(`no view provider ${id}`);
      const view = new FakeWebviewView();
      await provider.resolveWebviewView(view, {}, new CancellationTokenSource().token);
      return view;
    },
    /** Changes a `remoteAssistant.*`-style setting and fires onDidChangeConfiguration. */
    setSetting(key: string, value: unknown): void {
      this.settings.set(key, value);
      this.configChanged.fire({ affectsConfiguration: (s: string) => key === s || key.startsWith(`${s}.`) });
    },
    reset(): void {
      Object.assign(this, createTesting());
    },
  };
}

export const testing = createTesting();

/**
 * A terminal whose shell integration runs each command line with /bin/sh in its cwd: output comes
 * through `execution.read()` (wrapped in the integration's escape sequences, as a real shell's is)
 * and the exit code through onDidEndTerminalShellExecution.
 */
export class FakeTerminal {
  shellIntegration: { executeCommand(commandLine: string): { read(): AsyncIterable<string> } } | undefined;
  exitStatus: { code: number } | undefined;
  shown = 0;
  readonly sent: string[] = [];
  readonly commandLines: string[] = [];
  private running: ChildProcess | undefined;

  constructor(
    readonly name: string,
    readonly cwd: string,
  ) {
    if (!testing.shellIntegration) return;
    setImmediate(() => {
      this.shellIntegration = { executeCommand: (commandLine) => this.execute(commandLine) };
      testing.shellIntegrationChanged.fire({ terminal: this });
    });
  }

  show(): void {
    this.shown += 1;
  }

  sendText(text: string): void {
    this.sent.push(text);
    if (text === '\x03') this.running?.kill('SIGINT');
  }

  dispose(): void {
    this.exitStatus = { code: 0 };
    this.running?.kill('SIGHUP');
    testing.terminalClosed.fire(this);
  }

  private execute(commandLine: string) {
    this.commandLines.push(commandLine);
    const chunks: string[] = ['\x1b]633;C\x07'];
    let finished = false;
    let wake: (() => void) | undefined;
    const child = spawn('/bin/sh', ['-c', commandLine], { cwd: this.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    this.running = child;
    const push = (data: Buffer) => {
      chunks.push(`\x1b[32m${data.toString()}\x1b[0m`);
      wake?.();
    };
    child.stdout!.on('data', push);
    child.stderr!.on('data', push);
    const execution = {
      read: async function* () {
        for (;;) {
          while (chunks.length > 0) yield chunks.shift()!;
          if (finished) return;
          await new Promise<void>((resolve) => (wake = resolve));
        }
      },
    };
    child.on('close', (code) => {
      chunks.push('\x1b]633;D\x07');
      finished = true;
      wake?.();
      this.running = undefined;
      testing.shellExecutionEnded.fire({ terminal: this, execution, exitCode: code ?? undefined });
    });
    return execution;
  }
}

async function answer<T>(queue: Answer<T>[], args: unknown[]): Promise<T | undefined> {
  const next = queue.shift();
  if (next === undefined) return undefined;
  return typeof next === 'function' ? (next as (...a: unknown[]) => T | Promise<T>)(...args) : next;
}

/** Items are strings or MessageItems ({title}); `items` records their titles, and an answer given as a title returns that item, as VS Code does. */
function showMessage(kind: ShownMessage['kind']) {
  return async (message: string, ...rest: unknown[]) => {
    const options = rest[0] && typeof rest[0] === 'object' && !('title' in (rest[0] as object)) ? rest.shift() : undefined;
    const titles = rest.map((item) => (typeof item === 'string' ? item : (item as { title: string }).title));
    testing.messages.push({ kind, message, options, items: titles });
    const chosen = await answer(testing.answers[kind], [message, options, ...titles]);
    const index = chosen === undefined ? -1 : titles.indexOf(chosen);
    return index >= 0 ? rest[index] : chosen;
  };
}

export const window = {
  activeTextEditor: undefined as unknown,
  createOutputChannel: (name: string) => ({
    name,
    appendLine: (line: string) => testing.outputLines.push(line),
    append: (text: string) => testing.outputLines.push(text),
    show: () => undefined,
    dispose: () => undefined,
  }),
  createStatusBarItem: (id: string, alignment?: StatusBarAlignment, priority?: number) => {
    const item = {
      id,
      alignment,
      priority,
      text: '',
      tooltip: '',
      command: undefined as unknown,
      name: '',
      visible: false,
      show() {
        item.visible = true;
      },
      hide() {
        item.visible = false;
      },
      dispose() {
        item.visible = false;
      },
    };
    testing.statusBarItems.push(item);
    return item;
  },
  showInformationMessage: showMessage('info'),
  showWarningMessage: showMessage('warning'),
  showErrorMessage: showMessage('error'),
  showInputBox: async (options: Record<string, unknown> = {}) => {
    testing.inputBoxes.push(options);
    const value = await answer(testing.answers.inputBox, [options]);
    const validate = options.validateInput as ((v: string) => string | undefined) | undefined;
    if (value !== undefined && validate?.(value)) throw new Error(`the double's input box was answered with an invalid value: ${value} (${validate(value)})`);
    return value;
  },
  showQuickPick: async (items: any, options?: unknown) => {
    const resolved = await items;
    testing.quickPicks.push({ items: resolved, options });
    return answer(testing.answers.quickPick, [resolved, options]);
  },
  createQuickPick: () => {
    const pick = new FakeQuickPick();
    testing.createdQuickPicks.push(pick);
    return pick;
  },
  showSaveDialog: async (options: Record<string, unknown> = {}) => {
    testing.saveDialogs.push(options);
    return answer(testing.answers.saveDialog, [options]);
  },
  registerWebviewViewProvider: (id: string, provider: any) => {
    testing.viewProviders.set(id, provider);
    return new Disposable(() => testing.viewProviders.delete(id));
  },
  createWebviewPanel: (viewType: string, title: string) => {
    const panel = { viewType, title, webview: new FakeWebview(), dispose: () => undefined, onDidDispose: new EventEmitter<void>().event };
    testing.panels.push(panel);
    return panel;
  },
  /** Like the editor: the document shown becomes the active editor. */
  showTextDocument: async (document: unknown) => {
    const editor = { document, selection: new Selection(new Position(0, 0), new Position(0, 0)), revealRange: () => undefined };
    window.activeTextEditor = editor;
    return editor;
  },
  withProgress: async (options: { location?: unknown; title?: string; cancellable?: boolean }, task: (progress: unknown, token: unknown) => Promise<unknown>) => {
    const source = new CancellationTokenSource();
    // cancel(): the user presses the notification's Cancel (or closes it).
    const entry = { options, messages: [] as string[], done: false, cancel: () => source.cancel() };
    testing.progress.push(entry);
    try {
      return await task({ report: (value: { message?: string }) => value.message !== undefined && entry.messages.push(value.message) }, source.token);
    } finally {
      entry.done = true;
    }
  },
  createTerminal: (options: { name: string; cwd: string }) => {
    const terminal = new FakeTerminal(options.name, options.cwd);
    testing.terminals.push(terminal);
    return terminal;
  },
  onDidChangeTerminalShellIntegration: (listener: Listener<{ terminal: FakeTerminal }>) => testing.shellIntegrationChanged.event(listener),
  onDidChangeActiveTextEditor: (listener: Listener<unknown>) => testing.activeEditorChanged.event(listener),
  onDidCloseTerminal: (listener: Listener<FakeTerminal>) => testing.terminalClosed.event(listener),
  onDidEndTerminalShellExecution: (listener: Listener<{ terminal: FakeTerminal; execution: unknown; exitCode: number | undefined }>) => testing.shellExecutionEnded.event(listener),
};

export const commands = {
  registerCommand: (id: string, fn: (...args: unknown[]) => unknown) => {
    testing.commands.set(id, fn);
    return new Disposable(() => testing.commands.delete(id));
  },
  executeCommand: async (id: string, ...args: unknown[]) => {
    testing.executed.push({ command: id, args });
    return testing.commands.get(id)?.(...args);
  },
};

export const workspace = {
  get workspaceFolders() {
    return testing.workspaceFolders;
  },
  getConfiguration: (section: string) => ({
    get: <T>(key: string, fallback?: T): T | undefined => (testing.settings.has(`${section}.${key}`) ? (testing.settings.get(`${section}.${key}`) as T) : fallback),
    update: async (key: string, value: unknown) => testing.setSetting(`${section}.${key}`, value),
  }),
  onDidChangeConfiguration: (listener: Listener<{ affectsConfiguration(section: string): boolean }>) => testing.configChanged.event(listener),
  onDidChangeWorkspaceFolders: (listener: Listener<unknown>) => testing.foldersChanged.event(listener),
  registerTextDocumentContentProvider: (scheme: string, provider: { provideTextDocumentContent(uri: Uri): string }) => {
    testing.contentProviders.set(scheme, provider);
    return new Disposable(() => testing.contentProviders.delete(scheme));
  },
  openTextDocument: async (uri: Uri) => {
    const text = await readFile(uri.fsPath, 'utf8');
    const lines = text.split('\n');
    const offsetOf = (p: Position) => lines.slice(0, p.line).reduce((sum, line) => sum + line.length + 1, 0) + p.character;
    const getText = (range?: Range) => (range ? text.slice(offsetOf(range.start), offsetOf(range.end)) : text);
    return { uri, getText, lineCount: lines.length, lineAt: (n: number) => ({ text: lines[n] ?? '' }) };
  },
  asRelativePath: (uri: Uri) => {
    const root = testing.workspaceFolders?.[0]?.uri.fsPath;
    return root ? nodePath.relative(root, uri.fsPath) : uri.fsPath;
  },
  fs: { readFile: async (uri: Uri) => new Uint8Array(await readFile(uri.fsPath)), writeFile: async (uri: Uri, content: Uint8Array) => writeFile(uri.fsPath, content) },
  /**
   * Like VS Code's: the files of the workspace folders matching `include` and not `exclude` (undefined:
   * the `files.exclude` setting's patterns; null: none), at most `maxResults`.
   */
  findFiles: async (include: string, exclude?: string | null, maxResults?: number) => {
    const excludes =
      exclude === null
        ? []
        : exclude !== undefined
          ? [exclude]
          : Object.entries(testing.settings.get('files.exclude') ?? {})
              .filter(([, on]) => on)
              .map(([glob]) => glob);
    const matches = (glob: string, path: string) => globToRegExp(glob).test(path);
    const found: Uri[] = [];
    for (const folder of testing.workspaceFolders ?? []) {
      for (const entry of await readdir(folder.uri.fsPath, { recursive: true, withFileTypes: true })) {
        if (!entry.isFile()) continue;
        const relative = nodePath.relative(folder.uri.fsPath, nodePath.join(entry.parentPath, entry.name)).split(nodePath.sep).join('/');
        if (!matches(include, relative) || excludes.some((glob) => matches(glob, relative))) continue;
        if (found.length === (maxResults ?? Infinity)) return found;
        found.push(Uri.file(nodePath.join(folder.uri.fsPath, relative)));
      }
    }
    return found;
  },
  onDidChangeTextDocument: (listener: Listener<{ document: unknown }>) => testing.documentChanged.event(listener),
};

export const env = {
  clipboard: { writeText: async (text: string) => void (testing.clipboard = text), readText: async () => testing.clipboard },
  openExternal: async () => true,
};

export const lm = {
  selectChatModels: async (selector: { id?: string; family?: string } = {}) =>
    testing.chatModels.filter((m) => (selector.id === undefined || m.id === selector.id) && (selector.family === undefined || m.family === selector.family)),
  onDidChangeChatModels: (listener: Listener<void>) => testing.chatModelsChanged.event(listener),
  get tools() {
    return testing.lmTools.map(({ name, description, inputSchema, tags }) => ({ name, description, inputSchema, tags }));
  },
  invokeTool: async (name: string, options: { input: object }) => {
    const tool = testing.lmTools.find((t) => t.name === name);
    if (!tool) throw new Error(`no tool ${name}`);
    testing.invokedTools.push({ name, input: options.input });
    return tool.invoke(options.input);
  },
};

export const extensions = {
  onDidChange: (listener: Listener<void>) => testing.extensionsChanged.event(listener),
};

export const languages = { getDiagnostics: () => [] };

export class FakeMemento {
  readonly values = new Map<string, unknown>();
  get<T>(key: string, fallback?: T): T | undefined {
    return this.values.has(key) ? (this.values.get(key) as T) : fallback;
  }
  async update(key: string, value: unknown): Promise<void> {
    this.values.set(key, value);
  }
  keys(): string[] {
    return [...this.values.keys()];
  }
}

/** A fake ExtensionContext with its own global storage directory. */
export function fakeContext(globalStorage: string, extensionPath = process.cwd()) {
  return {
    subscriptions: [] as { dispose(): unknown }[],
    globalStorageUri: Uri.file(globalStorage),
    extensionUri: Uri.file(extensionPath),
    extensionPath,
    secrets: new FakeSecretStorage(),
    globalState: new FakeMemento(),
  };
}

/** Makes `require('vscode')` (and `import ... from 'vscode'`) load this double. */
export function installVscodeDouble(): void {
  const mod = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
  const original = mod._resolveFilename;
  if ((original as { vscodeDouble?: boolean }).vscodeDouble) return;
  const self = __filename;
  const patched = function (this: unknown, request: string, ...rest: unknown[]) {
    if (request === 'vscode') return self;
    return original.call(this, request, ...rest);
  };
  (patched as { vscodeDouble?: boolean }).vscodeDouble = true;
  mod._resolveFilename = patched;
}
