import type { PermissionDecision, PermissionMode, ServiceConfig } from '../protocol';

export interface PermissionRules {
  allow: readonly string[];
  deny: readonly string[];
}

export interface PermissionQuestion {
  conversationId: string;
  /** Source of the chat (`ws`, `editor`, `webhook:<account>`...). */
  source: string;
  tool: string;
  arguments: Record<string, unknown>;
  /** What rules match after `<tool>:`, e.g. the command line of run_command. */
  subject?: string;
  signal: AbortSignal;
}

/** Asks a person; resolves with their decision (implementations deny on timeout or when nobody can answer). */
export type AskPermission = (question: PermissionQuestion) => Promise<PermissionDecision>;

export type Verdict = { allowed: boolean; reason: 'source' | 'rule' | 'mode' | 'session' | 'user' };

/**
 * The mode for a tool call whose context holds untrusted text (a webhook account's turn, or the user's
 * turn in a webhook conversation), replacing `permission_mode`; undefined when all of it is the user's.
 */
export type UntrustedToolMode = (question: Pick<PermissionQuestion, 'source' | 'conversationId'>) => PermissionMode | undefined;

function globToRegExp(glob: string): RegExp {
  return new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`, 's');
}

/** `read_file` matches the tool; `run_command:git status*` matches the tool and its subject. */
export function ruleMatches(rule: string, tool: string, subject: string | undefined): boolean {
  const colon = rule.indexOf(':');
  const toolPart = colon < 0 ? rule : rule.slice(0, colon);
  if (!globToRegExp(toolPart).test(tool)) return false;
  if (colon < 0) return true;
  return subject !== undefined && globToRegExp(rule.slice(colon + 1)).test(subject);
}

/**
 * Whether a tool call may run: deny rules, then allow rules, then `permission_mode` read afresh at each
 * call (so a change applies to the next call, even inside a running chat); in `ask` mode, a tool the
 * user allowed for the conversation runs, otherwise a person is asked.
 *
 * A call whose context holds untrusted text gets its mode from `untrustedMode`: `deny` (a webhook account
 * that has not opted in) is final, before any rule is read, since rules written for the user's own chats
 * must not let untrusted text run a tool; another mode replaces `permission_mode`, except that
 * `permission_mode: "deny"` still stops everything.
 */
export class PermissionGate {
  private readonly sessionAllowed = new Set<string>();

  constructor(
    private readonly config: () => Pick<ServiceConfig, 'permission_mode' | 'permission_rules'>,
    private readonly ask: AskPermission,
    private readonly untrustedMode: UntrustedToolMode = () => undefined,
  ) {}

  async check(question: PermissionQuestion): Promise<Verdict> {
    const { permission_rules: rules, permission_mode: globalMode } = this.config();
    const untrusted = this.untrustedMode(question);
    if (untrusted === 'deny') return { allowed: false, reason: 'source' };
    const mode = untrusted === undefined || globalMode === 'deny' ? globalMode : untrusted;
    if (rules.deny.some((rule) => ruleMatches(rule, question.tool, question.subject))) return { allowed: false, reason: 'rule' };
    if (rules.allow.some((rule) => ruleMatches(rule, question.tool, question.subject))) return { allowed: true, reason: 'rule' };
    return this.byMode(mode, question);
  }

  /** Forgets what was allowed for a conversation (it was deleted). */
  forget(conversationId: string): void {
    for (const key of this.sessionAllowed) if (key.startsWith(`${conversationId}\u0000`)) this.sessionAllowed.delete(key);
  }

  private async byMode(mode: PermissionMode, question: PermissionQuestion): Promise<Verdict> {
    if (mode === 'allow') return { allowed: true, reason: 'mode' };
    if (mode === 'deny') return { allowed: false, reason: 'mode' };
    const key = `${question.conversationId}\u0000${question.tool}`;
    if (this.sessionAllowed.has(key)) return { allowed: true, reason: 'session' };
    const decision = await this.ask(question);
    if (decision === 'allow_session') this.sessionAllowed.add(key);
    return { allowed: decision !== 'deny', reason: 'user' };
  }
}
