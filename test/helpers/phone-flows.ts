/**
 * The phone's core flows, written once and run on each browser engine (test/web/engines/*.test.ts, one
 * file per engine so the test runner runs two engines at once): pair with a one-time secret, a streamed
 * chat, allow and deny a prompt, search, undo a turn, a worktree conversation's Changes sheet (revert a
 * hunk), the offline outbox. Real parts: the service in process with the fake OpenAI provider over a
 * temp workspace that is a git repository, media/ served on 127.0.0.1, the page's
 * socket through a door the test can cut (offline alike on every engine), one browser per engine and
 * file (test/helpers/engines.ts). Runs after `node esbuild.mjs`.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { serveStatic, type StaticServer } from './browser';
import { startCuttableProxy, type CuttableProxy } from './cuttable-proxy';
import { launchEngine, type Engine, type EngineName, type EnginePage } from './engines';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai';
import { git, gitRepository } from './git-repo';
import { startService, type RunningService } from './service';
import { tempDir } from './temp';
import { TestClient } from './ws-client';

const MEDIA = resolve('media');
const SCREENS = join('test-output', 'screens', 'engines');
/** In the chat on screen (the page keeps one per paired machine). */
const SHOWN = '.machine-view:not([hidden])';

/** Page scripts (function bodies, run through the driver). */
const CONNECTED = `var c = document.querySelector('${SHOWN} .connection'); return !!c && c.dataset.state === 'open';`;
const APP_BEFORE = 'line 1\nline 2\nline 3\n';
const REPLY_DONE = `var all = document.querySelectorAll('${SHOWN} .message.assistant:not(.streaming)'); for (var i = 0; i < all.length; i++) { if (all[i].textContent.indexOf(arguments[0]) >= 0) return true; } return false;`;

export function phoneCoreFlows(engineName: EngineName): void {
  let workspace: { dir: string; cleanup: () => Promise<void> };
  let fake: FakeOpenAI;
  let svc: RunningService;
  let site: StaticServer;
  let door: CuttableProxy;
  let engine: Engine;
  let page: EnginePage;
  let started = 0;

  before(async () => {
    assert.ok(existsSync(join(MEDIA, 'chat-phone.js')), 'media/chat-phone.js is missing: run `node esbuild.mjs` first');
    await mkdir(SCREENS, { recursive: true });
    workspace = await tempDir('ra-engine-workspace-');
    // A git repository: a conversation may work in its own worktree (the Changes sheet's flow).
    await gitRepository(workspace.dir, { 'app.txt': APP_BEFORE });
    fake = await startFakeOpenAI();
    svc = await startService({ base_url: fake.url, model: 'fake-model', workspace: workspace.dir, permission_mode: 'ask' });
    site = await serveStatic(MEDIA);
    door = await startCuttableProxy(Number(new URL(svc.httpUrl).port));
    started = Date.now();
    engine = await launchEngine(engineName);
    page = await engine.open({ width: 390, height: 844 });
  });

  after(async () => {
    await page?.close().catch(() => undefined);
    await engine?.close();
    // How long this engine's flows take (the CI time it adds), for the note.
    if (started) process.stdout.write(`${engineName}: browser start and the core flows took ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    await door?.close();
    await site?.close();
    await svc?.dispose();
    await fake?.close();
    await workspace?.cleanup();
  });

  async function send(text: string): Promise<void> {
    await page.type(`${SHOWN} .composer-input`, text);
    await page.click(`${SHOWN} .composer .send`);
  }

  /** A flow's test; on failure the page is saved beside the screens, to see what the engine showed. */
  function flow(name: string, body: () => Promise<void>): void {
    test(`${engineName}: ${name}`, async () => {
      try {
        await body();
      } catch (error) {
        await page?.screenshot(join(SCREENS, `${engineName}-failed-${name.split(' ').slice(0, 4).join('-')}.png`)).catch(() => undefined);
        throw error;
      }
    });
  }

  flow('pairs from a pairing link with a one-time secret, and stays paired after a reload', async () => {
    const owner = await TestClient.authed(svc.wsUrl, svc.token);
    try {
      const secret = ((await owner.request({ type: 'create_lan_pairing' })).data as { pairing_secret: string }).pairing_secret;
      await page.goto(`${site.url}/phone.html#url=${encodeURIComponent(`ws://127.0.0.1:${door.port}/ws`)}&pair=${encodeURIComponent(secret)}`);
      await page.waitFor(CONNECTED, 'the page connected');
      assert.equal(await page.run<string>('return location.hash;'), '', 'the secret leaves the address bar');
      const devices = ((await owner.request({ type: 'list_devices' })).data as { devices: unknown[] }).devices;
      assert.equal(devices.length, 1, 'the phone is a paired device');
      await page.reload();
      await page.waitFor(CONNECTED, 'connected again after a reload, with its own device credential');
    } finally {
      owner.close();
    }
  });

  flow('a streamed reply shows piece by piece, then whole', async () => {
    const text = 'Streamed reply arriving in several pieces, one after another.';
    // The provider holds the rest of the reply until the page has shown its first pieces: a handshake,
    // not a race between its timer and the engine's next frame (Firefox's can come late under load).
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    fake.script({ text, chunks: 5, holdAfterChunks: { chunks: 2, until: released } });
    try {
      await send('stream to me please');
      await page.waitFor(
        `var m = document.querySelector('${SHOWN} .message.assistant.streaming'); return !!m && m.textContent.length > 0 && m.textContent.indexOf(arguments[0]) < 0;`,
        'part of the reply, shown while the rest is held',
        text,
      );
    } finally {
      release();
    }
    await page.waitFor(REPLY_DONE, 'the whole reply', text);
    await page.screenshot(join(SCREENS, `${engineName}-chat.png`));
  });

  flow('a prompt allowed runs the tool; one denied does not', async () => {
    fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'allowed.txt', content: 'yes\n' } }] }, { text: 'Wrote allowed.txt.' });
    await send('write allowed.txt');
    await page.click(`${SHOWN} .permission-card button[data-decision="allow"]`);
    await page.waitFor(REPLY_DONE, 'the reply after the allowed tool', 'Wrote allowed.txt.');
    assert.equal(existsSync(join(workspace.dir, 'allowed.txt')), true, 'the allowed write ran');

    fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'denied.txt', content: 'no\n' } }] }, { text: 'Did not write denied.txt.' });
    await send('write denied.txt');
    await page.click(`${SHOWN} .permission-card button[data-decision="deny"]`);
    await page.waitFor(REPLY_DONE, 'the reply after the denied tool', 'Did not write denied.txt.');
    assert.equal(existsSync(join(workspace.dir, 'denied.txt')), false, 'the denied write did not run');
  });

  flow('search finds a message and opens it, marked', async () => {
    await page.click(`${SHOWN} .drawer-toggle`);
    // Slid in all the way (WebKit here does not ask for reduced motion): a click mid-slide can miss.
    await page.waitFor(`var d = document.querySelector('${SHOWN} .drawer').getBoundingClientRect(); return d.left === 0 && d.width > 0;`, 'the drawer open');
    // The whole query at once: typed key by key, each prefix's hits replace the last ones, and a click
    // can land on a list being replaced (WebKit's driver then refuses it as not interactable).
    await page.run(`var input = document.querySelector('${SHOWN} .search-input'); input.value = 'pieces'; input.dispatchEvent(new Event('input', { bubbles: true })); return true;`);
    await page.waitFor(`return !!document.querySelector('${SHOWN} .search-hit');`, 'a hit');
    await page.click(`${SHOWN} .search-hit`);
    await page.waitFor(`var m = document.querySelector('${SHOWN} .message.found'); return !!m && m.textContent.indexOf('several pieces') >= 0;`, 'the message found, marked');
    await page.waitFor(`return document.querySelector('${SHOWN} .drawer-open') === null && getComputedStyle(document.querySelector('${SHOWN} .drawer')).visibility === 'hidden';`, 'the drawer closed');
  });

  flow('undo a turn removes the file it wrote', async () => {
    await page.click(`${SHOWN} .undo-turn`);
    await page.click(`${SHOWN} .undo-panel .undo-confirm`);
    await page.waitFor(`return !!document.querySelector('${SHOWN} .undo-file[data-outcome="deleted"]');`, 'the turn undone');
    assert.equal(existsSync(join(workspace.dir, 'allowed.txt')), false, 'the file the turn wrote is gone');
  });

  flow("a worktree conversation's Changes sheet shows the assistant's edit, and Revert takes it back", async () => {
    await page.click(`${SHOWN} .drawer-toggle`);
    await page.waitFor(`var d = document.querySelector('${SHOWN} .drawer').getBoundingClientRect(); return d.left === 0 && d.width > 0;`, 'the drawer open');
    await page.click(`${SHOWN} .new-chat`);
    await page.waitFor(`return getComputedStyle(document.querySelector('${SHOWN} .drawer')).visibility === 'hidden';`, 'the drawer closed');
    await page.click(`${SHOWN} .worktree-toggle input`);
    fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'app.txt', content: 'line 1\nline 2 by the assistant\nline 3\n' } }] }, { text: 'Edited app.txt.' });
    await send('Improve app.txt');
    await page.click(`${SHOWN} .permission-card button[data-decision="allow"]`);
    await page.waitFor(REPLY_DONE, 'the reply after the edit', 'Edited app.txt.');
    assert.equal(readFileSync(join(workspace.dir, 'app.txt'), 'utf8'), APP_BEFORE, "the user's own file is untouched");
    await page.waitFor(`var b = document.querySelector('${SHOWN} .changes-badge'); return !!b && b.textContent.indexOf('1 changed') >= 0;`, 'the "1 changed" badge');
    await page.click(`${SHOWN} .changes-badge`);
    await page.waitFor(
      `var l = document.querySelector('${SHOWN} .changes-panel:not([hidden]) .diff-line[data-kind="add"] .diff-text'); return !!l && l.textContent === 'line 2 by the assistant';`,
      "the hunk's added line",
    );
    await page.screenshot(join(SCREENS, `${engineName}-changes.png`));
    await page.click(`${SHOWN} .changes-panel .change-revert-hunk`);
    await page.waitFor(`var s = document.querySelector('${SHOWN} .changes-status'); return !!s && s.textContent.indexOf('Reverted a hunk of app.txt') >= 0;`, 'the hunk reverted');
    const worktree = git(workspace.dir, 'worktree', 'list', '--porcelain')
      .split('\n')
      .filter((line) => line.startsWith('worktree '))
      .map((line) => line.slice('worktree '.length))[1];
    assert.ok(worktree, 'the conversation has its own worktree');
    assert.equal(readFileSync(join(worktree, 'app.txt'), 'utf8'), APP_BEFORE, "the worktree's file is as before");
    await page.click(`${SHOWN} .changes-panel .changes-close`);
  });

  flow('a message typed offline waits in the outbox, then is sent when the connection returns', async () => {
    const asked = fake.requests.length;
    door.cut();
    await page.waitFor(`return !!document.querySelector('${SHOWN}.offline');`, 'the page to see it is offline');
    await send('typed while offline');
    await page.waitFor(`var m = document.querySelector('${SHOWN} .message.user.pending'); return !!m && m.textContent.indexOf('typed while offline') >= 0;`, 'the message waiting to send');
    assert.equal(fake.requests.length, asked, 'nothing reached the model while offline');
    door.restore();
    await page.waitFor(REPLY_DONE, 'the reply once back online', 'echo: typed while offline');
    assert.equal(await page.run<boolean>(`return document.querySelector('${SHOWN} .message.pending') === null;`), true, 'nothing left waiting');
  });
}
