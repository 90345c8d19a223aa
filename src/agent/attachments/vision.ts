import type { ServiceConfig } from '../../protocol';

/**
 * Models known to take image input, by provider. `vscode`: the editor's language model API (1.100) has
 * no image part, so images go to those models as files in the workspace.
 */
const KNOWN_VISION_MODELS: Record<ServiceConfig['provider'], RegExp | undefined> = {
  // OpenAI's own and the common vision models behind OpenAI-compatible servers (Ollama, LM Studio, OpenRouter).
  openai:
    /(^|[/:])(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-4-turbo|gpt-4-vision|gpt-5|o1(?!-mini)|o3|o4|llava|bakllava|pixtral|gemma-?3|qwen2?\.?5?-?vl|llama-?3\.2-vision|llama-?4|minicpm-v|gemini|claude)/i,
  // Every Claude model from Claude 3 on.
  anthropic: /claude-(3|[a-z]+-[4-9]|[4-9])/i,
  vscode: undefined,
};

/**
 * Whether the model receives images as image input: service.json's `vision_models` (model name ->
 * true/false) decides first, then the list of known models. The editor's models never do (no API for it).
 */
export function seesImages(config: Pick<ServiceConfig, 'provider' | 'vision_models'>, model: string): boolean {
  if (config.provider === 'vscode') return false;
  const override = config.vision_models[model];
  if (typeof override === 'boolean') return override;
  return KNOWN_VISION_MODELS[config.provider]?.test(model) ?? false;
}
