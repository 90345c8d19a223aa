import { defineTool } from './define-tool';
import { ToolError, type ToolSource } from './types';

export interface MemoryEntry {
  id: string;
  content: string;
  created_at: string;
  updated_at: string;
}

/** What the memory tools need of the store (`store.memory`), declared here so they do not depend on it. */
export interface MemoryStore {
  put(content: string): Promise<{ id: string }>;
  search(query: string, limit: number): MemoryEntry[] | Promise<MemoryEntry[]>;
  delete(id: string): Promise<boolean>;
  all(limit: number): MemoryEntry[] | Promise<MemoryEntry[]>;
}

export const RECALL_DEFAULT_LIMIT = 10;
export const RECALL_MAX_LIMIT = 100;
const MAX_MEMORY_CHARS = 10_000;

function formatEntries(entries: MemoryEntry[]): string {
  return entries.map((e) => `- [${e.id}] (${e.updated_at.slice(0, 10)}) ${e.content}`).join('\n');
}

/**
 * Long-term memory across conversations: `remember` keeps a fact, `recall` finds kept facts by words,
 * `forget` drops one by id.
 */
export function createMemoryToolSource(memory: MemoryStore): ToolSource {
  const remember = defineTool({
    name: 'remember',
    description:
      'Keep a fact for later conversations (a preference of the user, a decision, where something is). ' + 'Write it so that it makes sense on its own, without this conversation. Answers its id.',
    params: { content: { type: 'string', description: 'The fact to remember, self-contained.' } },
    async run(args) {
      const content = args.content.trim();
      if (content === '') throw new ToolError('content is empty; there is nothing to remember');
      if (content.length > MAX_MEMORY_CHARS) throw new ToolError(`content is ${content.length} characters; keep a memory under ${MAX_MEMORY_CHARS}`);
      const { id } = await memory.put(content);
      return { content: `Remembered (id ${id}).` };
    },
  });

  const recall = defineTool({
    name: 'recall',
    description:
      'Search what was remembered in earlier conversations: entries containing every word of query, newest first, ' + 'each as `- [id] (date) content`. An empty query lists the newest entries.',
    params: {
      query: { type: 'string', description: 'Words to look for (all must appear); empty for the newest entries.' },
      limit: { type: 'integer', optional: true, description: `Most entries to return (default ${RECALL_DEFAULT_LIMIT}, at most ${RECALL_MAX_LIMIT}).` },
    },
    async run(args) {
      const limit = args.limit ?? RECALL_DEFAULT_LIMIT;
      if (limit < 1 || limit > RECALL_MAX_LIMIT) throw new ToolError(`limit must be between 1 and ${RECALL_MAX_LIMIT}, got ${limit}`);
      const query = args.query.trim();
      const entries = await (query === '' ? memory.all(limit) : memory.search(query, limit));
      if (entries.length === 0) return { content: query === '' ? 'Nothing has been remembered yet.' : `Nothing remembered matches "${query}".` };
      return { content: formatEntries(entries) };
    },
  });

  const forget = defineTool({
    name: 'forget',
    description: 'Delete a remembered entry by its id (as recall shows it), when it is wrong or no longer wanted.',
    params: { id: { type: 'string', description: 'The id of the entry to delete.' } },
    subject: (args) => (typeof args.id === 'string' ? args.id : undefined),
    async run(args) {
      const deleted = await memory.delete(args.id);
      if (!deleted) throw new ToolError(`there is no remembered entry with id ${args.id}`);
      return { content: `Forgot ${args.id}.` };
    },
  });

  const tools = [remember, recall, forget];
  // The memory is the user's, not a file of the workspace: the same for a worktree's conversation.
  return { name: 'memory', followsArea: true, tools: async () => tools };
}
