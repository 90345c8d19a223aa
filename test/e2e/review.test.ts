/**
 * Review in the editor (issue 24), end to end in a real VS Code: the packaged .vsix in a fresh
 * code-server over a workspace that is a git repository, the model a fake OpenAI-compatible server. A
 * conversation in its own worktree changes a file; "Remote Assistant: Review Changes" opens VS Code's diff
 * editor with the base on the left and the worktree's file on the right, the change marked; the person's
 * own file is untouched. Screenshots go to test-artifacts/e2e/ (review-*.png).
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import { gitRepository } from '../helpers/git-repo';
import { waitFor } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';
import { freePort, packageVsix, startCodeServer, type CodeServer } from './code-server';
import { ARTIFACTS, Workbench } from './workbench';

const AUTH_TOKEN = 'e2e-review-access-token-3c9a7f1e5b2d8a4c';
const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}\n`).join('');
const BEFORE = lines(30);
const CHANGED = BEFORE.replace('line 3\n', 'line 3 by the assistant\n');

describe('review of a worktree conversation in VS Code (code-server + Chromium)', { timeout: 600_000 }, () => {
  let scratch: string;
  let workspace: string;
  let fake: FakeOpenAI;
  let editor: CodeServer | undefined;
  let wb: Workbench | undefined;
  let client: TestClient | undefined;
  let servicePort: number;

  before(
    async () => {
      await mkdir(ARTIFACTS, { recursive: true });
      packageVsix();
      scratch = await mkdtemp(join(tmpdir(), 'ra-e2e-review-'));
      workspace = join(scratch, 'workspace');
      await gitRepository(workspace, { 'app.txt': BEFORE });
      fake = await startFakeOpenAI();
      servicePort = await freePort();
      editor = await startCodeServer({
        scratch,
        workspace,
        settings: { 'remoteAssistant.port': servicePort },
        globalStorage: {
          'service.json': JSON.stringify({ auth_token: AUTH_TOKEN, provider: 'openai', model: 'fake-model', base_url: fake.url, api_key: 'sk-e2e-review', permission_mode: 'allow' }, null, 2),
        },
      });
      wb = await Workbench.launch(join(scratch, 'chromium'));
      await wb.open(editor.workbenchUrl);
    },
    { timeout: 420_000 },
  );

  after(async () => {
    client?.close();
    await wb?.close();
    await editor?.stop();
    await fake?.close();
    if (scratch && !process.env.RA_E2E_KEEP) await rm(scratch, { recursive: true, force: true });
  });

  it("Review Changes opens VS Code's diff editor: the base against the worktree's file, the change marked", { timeout: 180_000 }, async () => {
    const w = wb!;
    try {
      await w.statusItem.waitFor();
      await waitFor(async () => (await w.statusText()).includes(String(servicePort)), 'the service to listen', 60_000, 100);
      client = await TestClient.authed(`ws://127.0.0.1:${servicePort}/ws`, AUTH_TOKEN);
      fake.script({ tool_calls: [{ name: 'write_file', arguments: { path: 'app.txt', content: CHANGED } }] }, { text: 'Edited app.txt.' });
      const chat = await client.request({ type: 'chat', message: 'Improve app.txt in a worktree', worktree: true }, 60_000);
      assert.equal(chat.status, 'ok', JSON.stringify(chat));
      const id = (chat.data as { conversation_id: string }).conversation_id;
      const changes = (await client.request({ type: 'get_changes', conversation_id: id })).data as { worktree: { branch: string; path: string } };

      await w.runCommand('Remote Assistant: Review Changes');
      await w.pick('Improve app.txt in a worktree');
      const tab = w.page.locator('.tabs-container .tab', { hasText: `app.txt: base ↔ ${changes.worktree.branch}` });
      await tab.waitFor();
      const diff = w.page.locator('.monaco-diff-editor').first();
      await diff.waitFor();
      await diff.locator('.editor.modified .view-line', { hasText: 'line 3 by the assistant' }).waitFor();
      await diff
        .locator('.editor.original .view-line', { hasText: /^line\s3$/ })
        .first()
        .waitFor();
      // The changed line is marked as inserted on the right and removed on the left.
      assert.ok((await diff.locator('.editor.modified .line-insert').count()) > 0, 'the change is marked on the worktree side');
      assert.ok((await diff.locator('.editor.original .line-delete').count()) > 0, 'and on the base side');
      await w.screenshot('review-diff-editor');
      // The right side is the worktree's file; the person's own file is untouched.
      assert.equal(await readFile(join(changes.worktree.path, 'app.txt'), 'utf8'), CHANGED);
      assert.equal(await readFile(join(workspace, 'app.txt'), 'utf8'), BEFORE);
    } catch (error) {
      await w.screenshot('FAILED-review').catch(() => undefined);
      if (editor) await writeFile(join(ARTIFACTS, 'code-server-review-output.txt'), editor.output()).catch(() => undefined);
      throw error;
    }
  });
});
