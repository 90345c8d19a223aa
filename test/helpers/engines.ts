/**
 * The phone page in three browser engines, behind one small driver, for tests that run the same flow on
 * each (test/web/phone-engines.test.ts). Nothing is downloaded: Debian's packages, installed by the
 * pretest step (scripts/test-prerequisites.sh); the recipe is ../shared/notes/cross-browser.md.
 * - chromium: /usr/bin/chromium through playwright-core (test/helpers/browser.ts);
 * - firefox: /usr/bin/firefox-esr through puppeteer-core over WebDriver BiDi, truly headless;
 * - webkit: WebKitGTK's MiniBrowser through Debian's WebKitWebDriver (classic W3C WebDriver, spoken here
 *   with fetch), under an Xvfb of its own (the GTK MiniBrowser has no headless mode).
 * Scripts run in the page as function bodies (strings: tsx's helpers do not exist in the page), through
 * the driver, so the page's CSP (no inline script, no eval) does not apply to them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import puppeteer from 'puppeteer-core';
import { launchChromium } from './browser';

export type EngineName = 'chromium' | 'firefox' | 'webkit';
export const ENGINES: readonly EngineName[] = ['chromium', 'firefox', 'webkit'];

export const FIREFOX_PATH = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr';
export const WEBKIT_DRIVER_PATH = process.env.WEBKIT_DRIVER_PATH ?? '/usr/bin/WebKitWebDriver';
export const MINIBROWSER_PATH = process.env.MINIBROWSER_PATH ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
const WAIT = 15_000;

/** One page of one engine, at a phone's width. */
export interface EnginePage {
  readonly engine: EngineName;
  goto(url: string): Promise<void>;
  reload(): Promise<void>;
  /** Runs `body` (a function body; its arguments are `arguments[0]`, ...) in the page and returns its JSON result. */
  run<T>(body: string, ...args: unknown[]): Promise<T>;
  /** Polls `body` in the page until it returns something truthy. */
  waitFor(body: string, what: string, ...args: unknown[]): Promise<void>;
  /** A real click (the driver's) on the first element `selector` matches among those shown. */
  click(selector: string): Promise<void>;
  /** Real keystrokes into the first element `selector` matches. */
  type(selector: string, text: string): Promise<void>;
  screenshot(path: string): Promise<void>;
  close(): Promise<void>;
}

/** One browser of one engine; `open` gives a page with a fresh profile (storage) where the engine can. */
export interface Engine {
  readonly name: EngineName;
  open(viewport: { width: number; height: number }): Promise<EnginePage>;
  close(): Promise<void>;
}

/** What each engine needs on the machine (Debian's packages: scripts/test-prerequisites.sh installs them). */
const NEEDS: Record<EngineName, string[]> = {
  chromium: [],
  firefox: [FIREFOX_PATH],
  webkit: [WEBKIT_DRIVER_PATH, MINIBROWSER_PATH, '/usr/bin/Xvfb'],
};

export function launchEngine(name: EngineName): Promise<Engine> {
  const missing = NEEDS[name].filter((path) => !existsSync(path));
  if (missing.length > 0) return Promise.reject(new Error(`${name}: ${missing.join(', ')} missing: run \`bash scripts/test-prerequisites.sh\` (npm test's pretest step)`));
  if (name === 'chromium') return launchChromiumEngine();
  if (name === 'firefox') return launchFirefoxEngine();
  return launchWebKitEngine();
}

/** `body` wrapped so every driver can run it as an expression. */
function expression(body: string, args: unknown[]): string {
  return `(function () { ${body} }).apply(null, ${JSON.stringify(args)})`;
}

async function poll(check: () => Promise<unknown>, what: string): Promise<void> {
  const until = Date.now() + WAIT;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Index of the first shown element `arguments[0]` matches (the phone page keeps a hidden chat per other machine). */
const SHOWN = `var all = document.querySelectorAll(arguments[0]); for (var i = 0; i < all.length; i++) { if (all[i].getClientRects().length > 0) return i; } return -1;`;

/** What one engine's driver does itself; the rest of a page (scripts, waiting, finding the shown element) is shared. */
interface DriverParts {
  evaluate(expression: string): Promise<unknown>;
  /** Clicks / types into the `index`th element `selector` matches. */
  clickAt(selector: string, index: number): Promise<void>;
  typeAt(selector: string, index: number, text: string): Promise<void>;
  goto(url: string): Promise<void>;
  reload(): Promise<void>;
  screenshot(path: string): Promise<void>;
  close(): Promise<void>;
}

function enginePage(engine: EngineName, parts: DriverParts): EnginePage {
  const run = <T>(body: string, ...args: unknown[]) => parts.evaluate(expression(body, args)) as Promise<T>;
  const shown = async (selector: string) => {
    let index = -1;
    await poll(async () => (index = await run<number>(SHOWN, selector)) >= 0, selector);
    return index;
  };
  return {
    engine,
    goto: (url) => parts.goto(url),
    reload: () => parts.reload(),
    run,
    waitFor: (body, what, ...args) => poll(() => run(body, ...args), what),
    click: async (selector) => parts.clickAt(selector, await shown(selector)),
    type: async (selector, text) => parts.typeAt(selector, await shown(selector), text),
    screenshot: (path) => parts.screenshot(path),
    close: () => parts.close(),
  };
}

async function launchChromiumEngine(): Promise<Engine> {
  const browser = await launchChromium();
  return {
    name: 'chromium',
    async open(viewport) {
      const context = await browser.newContext({ viewport, deviceScaleFactor: 2, isMobile: true, hasTouch: true, reducedMotion: 'reduce' });
      const page = await context.newPage();
      page.setDefaultTimeout(WAIT);
      return enginePage('chromium', {
        evaluate: (script) => page.evaluate(script),
        clickAt: (selector, index) => page.locator(selector).nth(index).click(),
        typeAt: (selector, index, text) => page.locator(selector).nth(index).pressSequentially(text),
        goto: async (url) => void (await page.goto(url)),
        reload: async () => void (await page.reload()),
        screenshot: async (path) => void (await page.screenshot({ path })),
        close: () => context.close(),
      });
    },
    close: () => browser.close(),
  };
}

async function launchFirefoxEngine(): Promise<Engine> {
  const browser = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX_PATH, headless: true });
  return {
    name: 'firefox',
    async open(viewport) {
      const context = await browser.createBrowserContext();
      const page = await context.newPage();
      page.setDefaultTimeout(WAIT);
      await page.setViewport({ ...viewport, deviceScaleFactor: 2 });
      return enginePage('firefox', {
        evaluate: (script) => page.evaluate(script),
        clickAt: async (selector, index) => (await page.$$(selector))[index].click(),
        typeAt: async (selector, index, text) => (await page.$$(selector))[index].type(text),
        goto: async (url) => void (await page.goto(url)),
        reload: async () => void (await page.reload()),
        screenshot: async (path) => void (await page.screenshot({ path })),
        close: () => context.close(),
      });
    },
    close: () => browser.close(),
  };
}

// ---- WebKit: classic W3C WebDriver over fetch ----------------------------------------------------

const ELEMENT = 'element-6066-11e4-a52e-4f735466cecf';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited(child);
  clearTimeout(timer);
}

/** An X display of its own: Xvfb picks a free one and writes its number to fd 3 (safe in parallel). */
async function startXvfb(): Promise<{ display: string; process: ChildProcess }> {
  const xvfb = spawn('Xvfb', ['-displayfd', '3', '-screen', '0', '1280x1024x24', '-nolisten', 'tcp'], { stdio: ['ignore', 'ignore', 'ignore', 'pipe'] });
  const display = await new Promise<string>((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error('Xvfb did not start')), WAIT);
    timer.unref();
    (xvfb.stdio[3] as Readable).on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) {
        clearTimeout(timer);
        resolve(`:${text.trim()}`);
      }
    });
    xvfb.once('exit', (code) => reject(new Error(`Xvfb exited (${code})`)));
  });
  return { display, process: xvfb };
}

async function launchWebKitEngine(): Promise<Engine> {
  const xvfb = await startXvfb();
  const port = await freePort();
  const driver = spawn(WEBKIT_DRIVER_PATH, [`--port=${port}`, '--host=127.0.0.1'], { stdio: 'ignore', env: { ...process.env, DISPLAY: xvfb.display } });
  const base = `http://127.0.0.1:${port}`;
  try {
    await poll(
      () =>
        fetch(`${base}/status`).then(
          (r) => r.ok,
          () => false,
        ),
      'WebKitWebDriver to answer',
    );
  } catch (error) {
    await stop(driver);
    await stop(xvfb.process);
    throw error;
  }
  const sessions = new Set<string>();
  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      // Without a display the driver never answers a new session (cross-browser.md): never wait forever.
      signal: AbortSignal.timeout(60_000),
    });
    const answer = (await response.json()) as { value: T & { error?: string; message?: string } };
    if (!response.ok) throw new Error(`WebDriver ${method} ${path}: ${answer.value.error}: ${answer.value.message}`);
    return answer.value;
  }
  return {
    name: 'webkit',
    async open(viewport) {
      // One MiniBrowser per page: a fresh profile each (an ephemeral automation session).
      const created = await call<{ sessionId: string }>('POST', '/session', {
        capabilities: { alwaysMatch: { browserName: 'MiniBrowser', 'webkitgtk:browserOptions': { binary: MINIBROWSER_PATH, args: ['--automation', '--full-screen'] } } },
      });
      const session = `/session/${created.sessionId}`;
      sessions.add(created.sessionId);
      await call('POST', `${session}/window/rect`, viewport);
      const element = async (selector: string, index: number) => (await call<Record<string, string>[]>('POST', `${session}/elements`, { using: 'css selector', value: selector }))[index][ELEMENT];
      return enginePage('webkit', {
        evaluate: (script) => call('POST', `${session}/execute/sync`, { script: `return ${script};`, args: [] }),
        // Retried while something slides over the element (a drawer closing), as playwright waits for a
        // stable, unobscured element before it clicks.
        clickAt: (selector, index) =>
          poll(async () => {
            try {
              await call('POST', `${session}/element/${await element(selector, index)}/click`, {});
              return true;
            } catch (error) {
              if (/click intercepted|not interactable|stale element/.test(String(error))) return false;
              throw error;
            }
          }, `${selector} to take a click`),
        typeAt: async (selector, index, text) => void (await call('POST', `${session}/element/${await element(selector, index)}/value`, { text })),
        goto: async (url) => void (await call('POST', `${session}/url`, { url })),
        reload: async () => void (await call('POST', `${session}/refresh`, {})),
        screenshot: async (path) => writeFile(path, Buffer.from(await call<string>('GET', `${session}/screenshot`), 'base64')),
        close: async () => {
          sessions.delete(created.sessionId);
          await call('DELETE', session);
        },
      });
    },
    async close() {
      for (const id of sessions) await call('DELETE', `/session/${id}`).catch(() => undefined);
      await stop(driver);
      await stop(xvfb.process);
    },
  };
}
