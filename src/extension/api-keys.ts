import * as vscode from 'vscode';
import { KEYED_PROVIDERS } from '../protocol';

const KEY_PREFIX = 'remoteAssistant.apiKey.';

/**
 * API keys in SecretStorage, one per provider. Host.apiKey is synchronous, so the keys are cached in
 * memory, loaded at activation and refreshed when SecretStorage changes (in any window).
 */
export class ApiKeys implements vscode.Disposable {
  private readonly cache = new Map<string, string>();
  private readonly subscription: vscode.Disposable;
  private readonly listeners: (() => void)[] = [];

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly providers: readonly string[] = KEYED_PROVIDERS,
  ) {
    this.subscription = secrets.onDidChange((e) => {
      if (e.key.startsWith(KEY_PREFIX)) void this.load(e.key.slice(KEY_PREFIX.length));
    });
  }

  async loadAll(): Promise<void> {
    await Promise.all(this.providers.map((p) => this.load(p)));
  }

  private async load(provider: string): Promise<void> {
    const value = await this.secrets.get(KEY_PREFIX + provider);
    if (value === this.cache.get(provider)) return;
    if (value) this.cache.set(provider, value);
    else this.cache.delete(provider);
    for (const listener of this.listeners) listener();
  }

  /** Called after a key changed (set here, or in SecretStorage by another window): the service's copy follows. */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Host.apiKey. */
  get = (provider: string): string | undefined => this.cache.get(provider);

  /** Every key held, for the webview's redaction. */
  values(): string[] {
    return [...this.cache.values()];
  }

  has(provider: string): boolean {
    return this.cache.has(provider);
  }

  async set(provider: string, value: string | undefined): Promise<void> {
    if (value) await this.secrets.store(KEY_PREFIX + provider, value);
    else await this.secrets.delete(KEY_PREFIX + provider);
    await this.load(provider);
  }

  dispose(): void {
    this.subscription.dispose();
  }
}
