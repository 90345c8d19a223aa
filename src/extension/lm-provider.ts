import * as vscode from 'vscode';
import { ProviderError, type ChatMessage, type CompletionRequest, type CompletionResult, type CompletionUsage, type Provider, type ToolCall } from '../agent/providers/types';
import type { ProviderName } from '../protocol';

const NAME: ProviderName = 'vscode';

async function pickModel(wanted: string): Promise<vscode.LanguageModelChat> {
  const byId = wanted ? await vscode.lm.selectChatModels({ id: wanted }) : [];
  if (byId[0]) return byId[0];
  const byFamily = wanted ? await vscode.lm.selectChatModels({ family: wanted }) : [];
  if (byFamily[0]) return byFamily[0];
  const any = await vscode.lm.selectChatModels();
  if (!any[0]) throw new ProviderError(NAME, 'not_configured', 'vscode: no language model is available in the editor (install or sign in to a chat extension)');
  return any[0];
}

function toLmMessages(messages: ChatMessage[]): vscode.LanguageModelChatMessage[] {
  const out: vscode.LanguageModelChatMessage[] = [];
  for (const m of messages) {
    switch (m.role) {
      case 'system':
      case 'user':
        // vscode.lm has no system role: the system prompt goes first as a user turn.
        out.push(vscode.LanguageModelChatMessage.User(m.content));
        break;
      case 'assistant': {
        const parts: (vscode.LanguageModelTextPart | vscode.LanguageModelToolCallPart)[] = [];
        if (m.content) parts.push(new vscode.LanguageModelTextPart(m.content));
        for (const call of m.tool_calls ?? []) parts.push(new vscode.LanguageModelToolCallPart(call.id, call.name, call.arguments));
        out.push(vscode.LanguageModelChatMessage.Assistant(parts.length > 0 ? parts : ''));
        break;
      }
      case 'tool':
        out.push(vscode.LanguageModelChatMessage.User([new vscode.LanguageModelToolResultPart(m.tool_call_id, [new vscode.LanguageModelTextPart(m.content)])]));
        break;
    }
  }
  return out;
}

function toProviderError(error: unknown): ProviderError {
  if (error instanceof ProviderError) return error;
  if (error instanceof vscode.LanguageModelError) {
    const kind = error.code === 'NoPermissions' ? 'auth' : error.code === 'Blocked' ? 'rate_limited' : error.code === 'NotFound' ? 'not_configured' : 'unavailable';
    return new ProviderError(NAME, kind, `vscode: ${error.message}`);
  }
  if (error instanceof vscode.CancellationError) return new ProviderError(NAME, 'cancelled', 'vscode: cancelled');
  return new ProviderError(NAME, 'unavailable', `vscode: ${(error as Error)?.message ?? String(error)}`);
}

/**
 * vscode.lm reports no token figures: they are counted with the model's own tokenizer (countTokens),
 * marked estimated. Undefined when the model cannot count (a failure costs the figures, never the answer).
 */
async function countUsage(
  model: vscode.LanguageModelChat,
  messages: vscode.LanguageModelChatMessage[],
  text: string,
  toolCalls: ToolCall[],
  token: vscode.CancellationToken,
): Promise<CompletionUsage | undefined> {
  try {
    const sum = async (items: (string | vscode.LanguageModelChatMessage)[]) => (await Promise.all(items.map((item) => model.countTokens(item, token)))).reduce((a, b) => a + b, 0);
    const output = [text, ...toolCalls.map((call) => `${call.name}${JSON.stringify(call.arguments)}`)].filter((piece) => piece !== '');
    const [input_tokens, output_tokens] = await Promise.all([sum(messages), sum(output)]);
    return { input_tokens, output_tokens, estimated: true };
  } catch {
    return undefined;
  }
}

/** The `vscode` provider: the editor's language models (Copilot and others) through vscode.lm. */
export function createLanguageModelProvider(): Provider {
  return {
    name: NAME,
    async complete(request: CompletionRequest): Promise<CompletionResult> {
      const cts = new vscode.CancellationTokenSource();
      const onAbort = () => cts.cancel();
      request.signal?.addEventListener('abort', onAbort, { once: true });
      try {
        if (request.signal?.aborted) throw new ProviderError(NAME, 'cancelled', 'vscode: cancelled');
        const model = await pickModel(request.model);
        const options: vscode.LanguageModelChatRequestOptions = {
          justification: 'Remote Assistant answers your chat with this model.',
          ...(request.tools?.length ? { tools: request.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters })) } : {}),
          ...(request.temperature !== undefined ? { modelOptions: { temperature: request.temperature } } : {}),
        };
        const messages = toLmMessages(request.messages);
        const response = await model.sendRequest(messages, options, cts.token);
        let text = '';
        const toolCalls: ToolCall[] = [];
        for await (const part of response.stream) {
          if (request.signal?.aborted) throw new ProviderError(NAME, 'cancelled', 'vscode: cancelled');
          if (part instanceof vscode.LanguageModelTextPart) {
            text += part.value;
            request.onDelta?.(part.value);
          } else if (part instanceof vscode.LanguageModelToolCallPart) {
            toolCalls.push({ id: part.callId, name: part.name, arguments: (part.input ?? {}) as Record<string, unknown> });
          }
        }
        if (request.signal?.aborted) throw new ProviderError(NAME, 'cancelled', 'vscode: cancelled');
        const usage = await countUsage(model, messages, text, toolCalls, cts.token);
        return {
          text,
          tool_calls: toolCalls,
          finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
          ...(usage ? { usage } : {}),
          ...(model.maxInputTokens > 0 ? { context_window: model.maxInputTokens } : {}),
        };
      } catch (error) {
        if (request.signal?.aborted) throw new ProviderError(NAME, 'cancelled', 'vscode: cancelled');
        throw toProviderError(error);
      } finally {
        request.signal?.removeEventListener('abort', onAbort);
        cts.dispose();
      }
    },
    async listModels(): Promise<string[]> {
      return (await vscode.lm.selectChatModels()).map((m) => m.id);
    },
  };
}
