import type { NewUsage } from '../../src/store/index';

/** Turn `i`'s reply usage in conversation `c` at `at` (c2 a webhook's), as the usage tests record it; `changes` override figures. */
export function usageRowOf(c: string, i: number, at: string, changes: Partial<NewUsage> = {}): NewUsage {
  return {
    message_id: `${c}-a${i}`,
    conversation_id: c,
    source: c === 'c2' ? 'webhook:acme' : 'ws',
    day: at.slice(0, 10),
    updated_at: at,
    provider: 'openai',
    model: i % 2 === 0 ? 'gpt-a' : 'gpt-b',
    input: 100 + i,
    output: 10 + i,
    cached: i,
    cost_micro: 50 + i,
    estimated: i === 3,
    calls: 1,
    context_used: 1000 + i,
    context_window: 8000,
    ...changes,
  };
}
