import type { ProviderName } from '../../protocol';
import type { ProviderSettings } from './registry';
import { onLoopback } from './fetch-warm-up';
import type { Provider } from './types';

/**
 * A streamed answer of a few pieces in each vendor's wire format, as their servers send it: what the
 * SDK parses in a first turn (the tests' fake servers, test/helpers/fake-*.ts, send the same shapes).
 */
const PIECES = ['A', ' warm', '-up', ' answer', '.'];

function openaiEvents(): string[] {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id: 'rehearsal',
    object: 'chat.completion.chunk',
    created: 0,
    model: 'rehearsal',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  return [
    chunk({ role: 'assistant', content: '' }),
    ...PIECES.map((content) => chunk({ content })),
    chunk({}, 'stop'),
    { id: 'rehearsal', object: 'chat.completion.chunk', created: 0, model: 'rehearsal', choices: [], usage: { prompt_tokens: 1, completion_tokens: 5, total_tokens: 6 } },
  ]
    .map((event) => `data: ${JSON.stringify(event)}\n\n`)
    .concat('data: [DONE]\n\n');
}

function anthropicEvents(): string[] {
  const message = { id: 'rehearsal', type: 'message', role: 'assistant', model: 'rehearsal', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } };
  return [
    { type: 'message_start', message },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '', citations: null } },
    ...PIECES.map((text) => ({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })),
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 5 } },
    { type: 'message_stop' },
  ].map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
}

const ANSWERS: Partial<Record<ProviderName, () => string[]>> = { openai: openaiEvents, anthropic: anthropicEvents };

/** The URL path each SDK's base URL has (its requests go below it). */
const BASE_PATHS: Partial<Record<ProviderName, string>> = { openai: '/v1', anthropic: '' };

/**
 * A fetch that answers every request with `events` as a stream, one event a chunk, without a socket:
 * nothing leaves the process.
 */
function cannedFetch(events: () => string[]): typeof fetch {
  return async () => {
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const event of events()) controller.enqueue(encoder.encode(event));
        controller.close();
      },
    });
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream', 'request-id': 'rehearsal' } });
  };
}

/** What a practice turn's provider answers (the canned pieces, whole). */
export const PRACTICE_ANSWER = PIECES.join('');

/**
 * A first streamed turn runs the SDK's request building, its stream and SSE parsing, and our attempt,
 * retry and assembling code for the first time: V8 compiles each function at its first call, and that
 * made the chat sent one second after start cost twice the second's CPU (issue 25). The service's
 * warm-up plays a practice turn (Agent.practiceTwin) through a provider built by the same factory with a
 * canned fetch: the same functions are compiled, nothing is sent, no key is used, nothing is written or
 * logged. Undefined for a provider without an HTTP SDK (the editor's language models): the practice
 * then has one of its own (cannedProvider).
 */
export function rehearsalProvider(name: ProviderName, build: (settings: ProviderSettings) => Provider): Provider | undefined {
  const answer = ANSWERS[name];
  // A loopback URL: a vendor's own host would want a real key before the SDK is even asked.
  return answer && build({ apiKey: 'rehearsal', baseUrl: 'http://127.0.0.1:9/v1', fetch: cannedFetch(answer) });
}

/**
 * The warm-up's one streamed answer through `name`'s SDK as a turn sends it, with Node's fetch (its
 * checks of the SDK's headers, the body's copy, the response as a byte stream: a first chat's request
 * ran them for the first time, about 3 ms of its samples), to a server of its own on loopback that
 * answers the canned stream (fetch-warm-up.ts: nothing leaves the machine, the key is none of the
 * service's). Resolves to the answer as streamed and as assembled; undefined for a provider without an HTTP SDK.
 */
export async function rehearseOverLoopback(name: ProviderName, build: (settings: ProviderSettings) => Provider, ended?: AbortSignal): Promise<string | undefined> {
  return onCannedServer(
    name,
    async (baseUrl) => {
      const provider = build({ apiKey: 'rehearsal', baseUrl });
      const pieces: string[] = [];
      const { text } = await provider.complete({ model: 'rehearsal', messages: [{ role: 'user', content: 'warm up' }], max_tokens: 16, onDelta: (piece) => pieces.push(piece) });
      return `${pieces.join('')}|${text}`;
    },
    ended,
  );
}

/**
 * Runs `use` with the base URL of a throwaway server on loopback that answers every request with `name`'s
 * canned stream (onLoopback: closed once `use` settles or `ended` aborts); undefined for a provider without one.
 */
export async function onCannedServer<T>(name: ProviderName, use: (baseUrl: string) => Promise<T>, ended?: AbortSignal): Promise<T | undefined> {
  const answer = ANSWERS[name];
  if (!answer) return undefined;
  return onLoopback(answer(), 'text/event-stream', (origin) => use(`${origin}${BASE_PATHS[name] ?? ''}`), ended);
}

/** A provider of no SDK that streams the canned pieces: the practice turn's where the configured one has no rehearsal. */
export function cannedProvider(name: string): Provider {
  return {
    name,
    complete: async ({ onDelta }) => {
      for (const piece of PIECES) onDelta?.(piece);
      return { text: PRACTICE_ANSWER, tool_calls: [], finish_reason: 'stop', usage: { input_tokens: 1, output_tokens: PIECES.length } };
    },
  };
}
