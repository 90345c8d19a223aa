/**
 * What a local OpenAI-compatible server says of a model's context window, where it tells one:
 * - LM Studio: `GET /api/v0/models/<model>`, `loaded_context_length` (what it runs with) or `max_context_length`;
 * - Ollama: `POST /api/show {model}`, the `num_ctx` of its parameters. Without one Ollama serves a
 *   default far smaller than the model's trained `context_length`, so that figure is not taken: set the
 *   window in service.json's `prices` instead (docs/protocol.md, "Context window and compaction").
 * Asked once per model (a failure too: never on every turn), within PROBE_TIMEOUT_MS, without the API key
 * (neither endpoint needs one, and the key is not theirs to see). Never asked of a vendor's host.
 */
const PROBE_TIMEOUT_MS = 2_000;
/** Kept this long, then asked again (a server may load the model with another context length). */
const REMEMBER_MS = 10 * 60_000;

type Fetch = typeof fetch;

async function json(fetchImpl: Fetch, url: string, init: RequestInit): Promise<unknown> {
  const response = await fetchImpl(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
  if (!response.ok) return undefined;
  return response.json();
}

const positive = (value: unknown): number | undefined => (typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : undefined);

async function lmStudio(fetchImpl: Fetch, origin: string, model: string): Promise<number | undefined> {
  const body = (await json(fetchImpl, `${origin}/api/v0/models/${encodeURIComponent(model)}`, { method: 'GET' })) as Record<string, unknown> | undefined;
  return positive(body?.loaded_context_length) ?? positive(body?.max_context_length);
}

async function ollama(fetchImpl: Fetch, origin: string, model: string): Promise<number | undefined> {
  const body = (await json(fetchImpl, `${origin}/api/show`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model }) })) as
    { parameters?: unknown } | undefined;
  const match = typeof body?.parameters === 'string' ? /^[ \t]*num_ctx[ \t]+(\d+)/m.exec(body.parameters) : null;
  return match ? positive(Number(match[1])) : undefined;
}

/** The figure of each model asked about, per server; one per provider (src/agent/providers/openai.ts). */
export class ServerWindows {
  private readonly known = new Map<string, { window: number | undefined; at: number; reached: boolean }>();
  private readonly asking = new Map<string, Promise<number | undefined>>();

  constructor(
    private readonly baseUrl: string,
    private readonly fetchImpl: Fetch = fetch,
    private readonly now: () => number = Date.now,
  ) {}

  async of(model: string): Promise<number | undefined> {
    const seen = this.known.get(model);
    if (seen && this.now() - seen.at < REMEMBER_MS) return seen.window;
    let asking = this.asking.get(model);
    if (!asking) {
      asking = this.ask(model).finally(() => this.asking.delete(model));
      this.asking.set(model, asking);
    }
    return asking;
  }

  /**
   * Asked ahead of the first turn (the service's warm-up, once listening). A server that could not be
   * reached then may not have been started yet: that turn asks again rather than going without for
   * REMEMBER_MS.
   */
  async warmUp(model: string): Promise<void> {
    await this.of(model);
    if (this.known.get(model)?.reached === false) this.known.delete(model);
  }

  private async ask(model: string): Promise<number | undefined> {
    const origin = new URL(this.baseUrl).origin;
    let window: number | undefined;
    let reached = false;
    for (const probe of [lmStudio, ollama]) {
      // An answer without a figure (a 404: not that kind of server) reached it; a failed fetch did not.
      window = await probe(this.fetchImpl, origin, model).then(
        (figure) => ((reached = true), figure),
        () => undefined,
      );
      if (window !== undefined) break;
    }
    this.known.set(model, { window, at: this.now(), reached });
    return window;
  }
}
