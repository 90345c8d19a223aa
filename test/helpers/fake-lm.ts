// A language model of the editor (vscode.lm) for the extension's tests.

/**
 * A language model as vscode.lm hands it out: streams parts, honours the cancellation token. It counts
 * 10 tokens a message and a string's characters (countTokens), and its window is 4096 tokens.
 */
export function fakeModel(id: string, parts: unknown[], seen: { messages?: unknown[]; options?: any; token?: any } = {}) {
  return {
    id,
    family: 'fam',
    name: id,
    maxInputTokens: 4096,
    async countTokens(what: unknown) {
      return typeof what === 'string' ? what.length : 10;
    },
    async sendRequest(messages: unknown[], options: unknown, token: { isCancellationRequested: boolean }) {
      Object.assign(seen, { messages, options, token });
      return {
        stream: (async function* () {
          for (const part of parts) {
            await new Promise((r) => setTimeout(r, 5));
            if (token.isCancellationRequested) throw new Error('cancelled by token');
            yield part;
          }
        })(),
      };
    },
  };
}
