/**
 * What the agent is given besides the conversation, as the chat shows it: the instruction files in
 * force (a line of small chips under the header) and the saved prompts (one-tap buttons above the
 * message box; one that takes an argument asks for it first). docs/protocol.md, "The agent's context".
 */
import type { InstructionFileInfo, SavedPrompt } from '../../protocol';
import { expandPrompt, slashCommandOf } from '../../protocol/saved-prompt-text';
import { h } from './dom';

/** The instruction files in force for the conversation on screen. */
export class InstructionsLine {
  readonly element: HTMLElement;

  constructor() {
    this.element = h('div', { class: 'instructions-line', hidden: true, 'aria-label': 'Instruction files the assistant follows' });
  }

  show(files: readonly InstructionFileInfo[]): void {
    this.element.hidden = files.length === 0;
    const chips = files.map((file) => {
      const name = file.scope === 'user' ? `${file.path} (yours)` : file.path;
      const title = `${file.scope === 'user' ? 'Your instructions for every project' : 'Project instructions'}: ${file.path}, ${file.bytes} bytes${file.cut ? ' (too long: only its beginning is given to the assistant)' : ''}`;
      return h('span', { class: `chip instruction-chip${file.cut ? ' cut' : ''}`, title }, name, file.cut ? ' (cut)' : '');
    });
    this.element.replaceChildren(h('span', { class: 'instructions-label' }, 'Follows'), ...chips);
  }
}

/** The saved prompts as buttons; `send` gets the message a prompt makes. */
export class PromptShelf {
  readonly element: HTMLElement;
  private readonly buttons: HTMLElement;
  private readonly argumentForm: HTMLFormElement;
  private readonly argumentLabel: HTMLElement;
  private readonly argumentInput: HTMLInputElement;
  private prompts: SavedPrompt[] = [];
  private chosen: SavedPrompt | undefined;

  constructor(private readonly send: (text: string) => void) {
    this.buttons = h('div', { class: 'prompt-buttons', role: 'toolbar', 'aria-label': 'Saved prompts' });
    this.argumentLabel = h('span', { class: 'prompt-argument-label' });
    this.argumentInput = h('input', { type: 'text', class: 'prompt-argument', 'aria-label': 'Argument for the prompt', enterkeyhint: 'send' });
    this.argumentForm = h(
      'form',
      { class: 'prompt-argument-form', hidden: true },
      this.argumentLabel,
      this.argumentInput,
      h('button', { type: 'submit', class: 'button primary' }, 'Send'),
      h('button', { type: 'button', class: 'button', onclick: () => this.close() }, 'Cancel'),
    );
    this.argumentForm.addEventListener('submit', (event) => {
      event.preventDefault();
      const prompt = this.chosen;
      if (!prompt) return;
      this.close();
      this.send(expandPrompt(prompt.template, this.argumentInput.value));
    });
    this.element = h('div', { class: 'saved-prompts', hidden: true }, this.buttons, this.argumentForm);
  }

  setPrompts(prompts: readonly SavedPrompt[]): void {
    this.prompts = [...prompts];
    this.element.hidden = prompts.length === 0;
    this.buttons.replaceChildren(
      ...prompts.map((prompt) =>
        h('button', { type: 'button', class: 'chip prompt-button', title: prompt.description || prompt.template, 'data-prompt': prompt.name, onclick: () => this.pick(prompt) }, `/${prompt.name}`),
      ),
    );
  }

  /** `/name args` typed in the message box: the message it makes, or undefined when no saved prompt has that name. */
  expandTyped(text: string): string | undefined {
    const typed = slashCommandOf(text);
    const prompt = typed && this.prompts.find((p) => p.name === typed.name);
    return prompt ? expandPrompt(prompt.template, typed.args) : undefined;
  }

  private pick(prompt: SavedPrompt): void {
    if (!prompt.takes_arguments) {
      this.close();
      this.send(expandPrompt(prompt.template, ''));
      return;
    }
    this.chosen = prompt;
    this.argumentLabel.textContent = `/${prompt.name}`;
    this.argumentInput.value = '';
    this.argumentInput.placeholder = prompt.description || 'Argument';
    this.argumentForm.hidden = false;
    this.argumentInput.focus();
  }

  private close(): void {
    this.chosen = undefined;
    this.argumentForm.hidden = true;
  }
}
