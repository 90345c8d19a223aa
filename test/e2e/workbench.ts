/**
 * Driving VS Code's workbench (code-server) in Debian's Chromium through playwright-core: the command
 * palette and quick picks, modal dialogs, notifications, the status bar and our chat webview. Each
 * helper waits on a condition (a selector, a text), never a fixed sleep.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type BrowserContext, type FrameLocator, type Locator, type Page } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../helpers/browser';
import { EXTENSION_ID, ROOT } from './code-server';

export const ARTIFACTS = join(ROOT, 'test-artifacts', 'e2e');
/** Screenshots are numbered in the order taken, across windows. */
let shots = 0;

export class Workbench {
  private constructor(
    readonly context: BrowserContext,
    readonly page: Page,
  ) {}

  /** A fresh Chromium profile (never a downloaded browser) with one page. */
  static async launch(profileDir: string): Promise<Workbench> {
    const context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      viewport: { width: 1280, height: 800 },
      // Screenshots of settled layouts: no sliding drawers (the chat UI honours reduced motion).
      reducedMotion: 'reduce',
      args: CHROMIUM_ARGS,
    });
    const page = context.pages()[0] ?? (await context.newPage());
    page.setDefaultTimeout(20_000);
    return new Workbench(context, page);
  }

  /** Another workbench window (a page of the same browser): code-server gives it its own extension host. */
  async newWindow(): Promise<Workbench> {
    const page = await this.context.newPage();
    page.setDefaultTimeout(20_000);
    const window = new Workbench(this.context, page);
    return window;
  }

  /** Closes this window as a user would (its extension host deactivates), keeping the browser. */
  async leave(): Promise<void> {
    await this.page.goto('about:blank');
  }

  async open(url: string): Promise<void> {
    await this.page.goto(url);
    await this.page.locator('.monaco-workbench .part.statusbar').waitFor();
  }

  /** Saves test-artifacts/e2e/NN-name.png; returns its path. */
  async screenshot(name: string): Promise<string> {
    await mkdir(ARTIFACTS, { recursive: true });
    const path = join(ARTIFACTS, `${String(++shots).padStart(2, '0')}-${name}.png`);
    await this.page.screenshot({ path });
    return path;
  }

  // ---- command palette and quick picks ------------------------------------------------------

  get quickInput(): Locator {
    return this.page.locator('.quick-input-widget');
  }

  /** Runs a command by its palette title, e.g. "Remote Assistant: Set Permission Mode". */
  async runCommand(title: string): Promise<void> {
    const input = this.quickInput.locator('input');
    const row = this.quickRow(title);
    for (let attempt = 1; ; attempt += 1) {
      // Keys pressed while a webview has the focus stay in its iframe: give the focus back to the workbench.
      await this.page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
      await this.page.keyboard.press('F1');
      try {
        await input.waitFor({ state: 'visible', timeout: 5_000 });
        await input.fill(`>${title}`);
        await row.waitFor({ state: 'visible', timeout: 5_000 });
        await row.click();
        return;
      } catch (error) {
        // The palette closes when something else takes the focus (a view that was still opening): open it again.
        if (attempt === 3) throw error;
        await this.page.keyboard.press('Escape');
      }
    }
  }

  /** The visible quick pick row whose label starts with `label`. */
  quickRow(label: string): Locator {
    return this.quickInput.locator('.monaco-list-row', { has: this.page.locator('.label-name', { hasText: label }) }).first();
  }

  async pick(label: string): Promise<void> {
    const row = this.quickRow(label);
    await row.waitFor({ state: 'visible' });
    await row.click();
    await this.quickInput.waitFor({ state: 'hidden' });
  }

  // ---- dialogs, notifications, status bar -----------------------------------------------------

  get dialog(): Locator {
    return this.page.locator('.monaco-dialog-box');
  }

  dialogButton(label: string): Locator {
    return this.dialog.locator('.dialog-buttons .monaco-button', { hasText: new RegExp(`^${label}$`) });
  }

  notification(text: string | RegExp): Locator {
    return this.page.locator('.notifications-toasts .notification-toast', { hasText: text });
  }

  /** Clears every notification (a later wait for a toast must not find an earlier one of the same words). */
  async clearNotifications(): Promise<void> {
    await this.runCommand('Notifications: Clear All Notifications');
    await this.page.locator('.notifications-toasts .notification-toast').first().waitFor({ state: 'detached' });
  }

  /** Our status bar item (its text is e.g. "5000 · ask" after the icon). */
  get statusItem(): Locator {
    return this.page.locator(`.part.statusbar [id="${EXTENSION_ID}.remoteAssistant.status"]`);
  }

  /** The waiting permission requests' count (shown only while some wait). */
  get statusPending(): Locator {
    return this.page.locator(`.part.statusbar [id="${EXTENSION_ID}.remoteAssistant.pending"]`);
  }

  /** The status item's accessible label: its icon name, text and tooltip (says whether this window hosts). */
  async statusLabel(): Promise<string> {
    return (await this.statusItem.getAttribute('aria-label')) ?? '';
  }

  async statusText(): Promise<string> {
    return ((await this.statusItem.textContent()) ?? '').replace(/\s+/g, ' ').trim();
  }

  // ---- our chat view ---------------------------------------------------------------------------

  /** Opens the Remote Assistant container from the activity bar. */
  async openChatView(): Promise<FrameLocator> {
    const item = this.page.locator('.part.activitybar .action-label[aria-label^="Remote Assistant"]');
    await item.click();
    const chat = this.chat;
    await chat.locator('.composer-input').waitFor({ state: 'visible' });
    return chat;
  }

  /** The chat webview's document (two nested iframes). */
  get chat(): FrameLocator {
    return this.page.frameLocator(`iframe.webview.ready[src*="extensionId=${EXTENSION_ID}"]`).frameLocator('#active-frame');
  }

  /** Leaves the workbench (so its extension host ends) and closes the browser. */
  async close(): Promise<void> {
    await this.page.goto('about:blank').catch(() => undefined);
    await this.context.close().catch(() => undefined);
  }
}
