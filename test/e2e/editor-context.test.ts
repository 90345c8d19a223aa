/**
 * End to end, in a real VS Code (issue 14, "Give it the editor's context"): the packaged .vsix and a
 * tiny fixture extension contributing a language model tool (test/e2e/fixtures/word-count-tool),
 * installed into a fresh code-server, driven in Debian's headless Chromium; the model is a fake
 * OpenAI-compatible server. "Ask Remote Assistant" from the editor's context menu on a selection shows
 * the chip and the provider receives the selected text; the fixture's tool is listed by List Tools as
 * from VS Code and runs only once the permission card is answered. Screenshots go to test-artifacts/e2e/.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FrameLocator } from 'playwright-core';
import { startFakeOpenAI, type FakeOpenAI } from '../helpers/fake-openai';
import type { RecordedRequest } from '../helpers/fake-http';
import { waitFor } from '../helpers/temp';
import { freePort, packageFixtureVsix, packageVsix, ROOT, startCodeServer, type CodeServer } from './code-server';
import { ARTIFACTS, Workbench } from './workbench';
import { withoutNote } from '../helpers/service-note';

const STEP_TIMEOUT = 90_000;
const MATH = '// math\n\nexport function add(a: number, b: number) {\n  return a + b;\n}\n\nexport const zero = 0;\n';
const SELECTED = 'export function add(a: number, b: number) {\n  return a + b;\n}';

const userTexts = (request: RecordedRequest) =>
  withoutNote((request.body as { messages?: { role: string; content: unknown }[] }).messages ?? [])
    .filter((m) => m.role === 'user')
    .map((m) => String(m.content));
const hasToolResult = (request: RecordedRequest) => withoutNote((request.body as { messages?: { role: string }[] }).messages ?? []).at(-1)?.role === 'tool';

describe("the editor's context and VS Code's tools, in a real VS Code (code-server + Chromium)", { timeout: 600_000 }, () => {
  let scratch: string;
  let fake: FakeOpenAI;
  let editor: CodeServer | undefined;
  let wb: Workbench | undefined;
  let chat: FrameLocator;

  async function step(name: string, run: () => Promise<void>): Promise<void> {
    try {
      await run();
    } catch (error) {
      if (wb) await wb.screenshot(`FAILED-context-${name}`).catch(() => undefined);
      if (editor) await writeFile(join(ARTIFACTS, 'code-server-context-output.txt'), editor.output()).catch(() => undefined);
      throw error;
    }
  }

  before(
    async () => {
      await mkdir(ARTIFACTS, { recursive: true });
      packageVsix();
      scratch = await mkdtemp(join(tmpdir(), 'ra-e2e-context-'));
      const fixture = packageFixtureVsix(join(ROOT, 'test', 'e2e', 'fixtures', 'word-count-tool'), scratch);
      const workspace = join(scratch, 'workspace');
      await mkdir(join(workspace, 'src'), { recursive: true });
      await writeFile(join(workspace, 'src', 'math.ts'), MATH);
      fake = await startFakeOpenAI();
      editor = await startCodeServer({
        scratch,
        workspace,
        settings: { 'remoteAssistant.port': await freePort(), 'remoteAssistant.attachActiveFile': false },
        globalStorage: {
          'service.json': JSON.stringify(
            { auth_token: 'e2e-context-token-3b9d1f7a5c2e8d4b6a0f', provider: 'openai', model: 'fake-model', base_url: fake.url, api_key: 'sk-e2e-context-0123456789', permission_mode: 'ask' },
            null,
            2,
          ),
        },
        otherExtensions: [fixture],
      });
      wb = await Workbench.launch(join(scratch, 'chromium'));
      await wb.open(editor.workbenchUrl);
    },
    { timeout: 420_000 },
  );

  after(async () => {
    await wb?.close();
    await editor?.stop();
    await fake?.close();
    if (scratch && !process.env.RA_E2E_KEEP) await rm(scratch, { recursive: true, force: true });
  });

  it('Ask Remote Assistant on a selection (editor context menu) shows the chip; the provider receives the selected text', { timeout: STEP_TIMEOUT }, () =>
    step('ask', async () => {
      const w = wb!;
      chat = await w.openChatView();
      await w.runCommand('Go to File...');
      await w.quickInput.locator('input').fill('math.ts');
      await w.quickRow('math.ts').waitFor();
      await w.page.keyboard.press('Enter');
      const lines = w.page.locator('.monaco-editor .view-lines');
      await lines.getByText('export const zero').waitFor();
      // Lines 3 to 5: from the start of line 3 to the start of line 6.
      await lines.getByText('export function add').click();
      await w.page.keyboard.press('Home');
      for (let i = 0; i < 3; i += 1) await w.page.keyboard.press('Shift+ArrowDown');
      await lines.getByText('return a + b').click({ button: 'right', modifiers: [] });
      const item = w.page.locator('.monaco-menu .action-item', { hasText: 'Ask Remote Assistant' });
      await item.waitFor();
      await w.screenshot('context-menu-ask');
      await item.click();

      const chip = chat.locator('.context-chips:not(.sent) .chip[data-kind="selection"]');
      await chip.waitFor();
      assert.equal((await chip.locator('.chip-label').innerText()).trim(), 'math.ts:3-5');
      await w.screenshot('ask-chip');
      const before = fake.requests.length;
      await chat.locator('.composer-input').fill('What does this do?');
      await chat.locator('.composer-input').press('Enter');
      await chat.locator('.message.assistant:not(.streaming)', { hasText: 'echo:' }).waitFor();
      const request = fake.requests.slice(before).find((r) => r.path.startsWith('/v1/chat/completions'))!;
      const user = userTexts(request).at(-1)!;
      assert.ok(user.includes(SELECTED), `the selected lines reach the provider:\n${user}`);
      assert.ok(user.includes('src/math.ts, lines 3-5'));
      assert.ok(!user.includes('export const zero'), 'only the selection');
      await chat.locator('.message.user .context-chips.sent .chip', { hasText: 'math.ts:3-5' }).waitFor();
      await w.screenshot('ask-sent');
    }),
  );

  it("another extension's tool appears in List Tools, marked from VS Code", { timeout: STEP_TIMEOUT }, () =>
    step('list-tools', async () => {
      const w = wb!;
      const row = w.quickRow('vscode.e2e_word_count');
      await waitFor(
        async () => {
          await w.runCommand('Remote Assistant: List Tools');
          // The list is virtual (rows out of view are not drawn): narrow it to VS Code's tools.
          await w.quickInput.locator('input').fill('vscode.');
          const shown = await row.waitFor({ state: 'visible', timeout: 3_000 }).then(
            () => true,
            () => false,
          );
          if (!shown) await w.page.keyboard.press('Escape');
          return shown;
        },
        'the fixture tool in List Tools (it registers once its extension activates)',
        30_000,
        500,
      );
      assert.match((await row.innerText()).replace(/\s+/g, ' '), /from VS Code/);
      await w.screenshot('list-tools-vscode');
      await w.page.keyboard.press('Escape');
      await w.quickInput.waitFor({ state: 'hidden' });
    }),
  );

  it('the model calls it: the permission card asks first; allowed, vscode.lm.invokeTool runs the fixture and its text is the tool result', { timeout: STEP_TIMEOUT }, () =>
    step('run-tool', async () => {
      const w = wb!;
      const round = (request: RecordedRequest) => {
        const messages = (request.body as { messages: { role: string; content: string }[] }).messages;
        return hasToolResult(request)
          ? { text: `The tool said: ${withoutNote(messages).at(-1)!.content}` }
          : { tool_calls: [{ name: 'vscode_e2e_word_count', arguments: { text: 'one two three four' } }] };
      };
      fake.script(round, round);
      const before = fake.requests.length;
      await chat.locator('.composer-input').fill('Count the words of "one two three four"');
      await chat.locator('.composer-input').press('Enter');
      const card = chat.locator('.permission-card');
      await card.waitFor();
      // Named for a person: "Allow e2e_word_count (VS Code) to run?" (src/protocol/tool-words.ts).
      assert.match(await card.innerText(), /e2e_word_count \(VS Code\)/);
      assert.equal(fake.requests.slice(before).filter(hasToolResult).length, 0, 'nothing ran before the answer');
      await w.screenshot('vscode-tool-permission');
      await card.locator('button[data-decision="allow"]').click();
      await chat.locator('.message.assistant:not(.streaming)', { hasText: '4 words (counted by the fixture extension)' }).waitFor();
      await w.screenshot('vscode-tool-ran');
    }),
  );
});
