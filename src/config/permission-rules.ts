import type { AuditActor } from '../protocol';
import type { Logger } from '../log/logger';
import type { ConfigFile } from './config-file';

/**
 * Appends an allow rule to service.json's `permission_rules` (what `allow_always` chose), keeping the
 * rest of the file as written; a rule already there is not added twice. A failure (a hand edit made the
 * file invalid, the rule limit is reached) is logged, not thrown: the person allowed this call, which
 * still runs; only the rule is missing.
 */
export async function addAllowRule(config: ConfigFile, rule: string, logger: Logger, by?: AuditActor): Promise<void> {
  try {
    await config.edit((raw) => {
      const rules = isObject(raw.permission_rules) ? raw.permission_rules : {};
      const allow = Array.isArray(rules.allow) ? rules.allow : [];
      if (allow.includes(rule)) return;
      raw.permission_rules = { ...rules, allow: [...allow, rule], deny: Array.isArray(rules.deny) ? rules.deny : [] };
    }, by);
    logger.info('permission.rule_added', { rule });
  } catch (error) {
    logger.warn('permission.rule_not_saved', { rule, error });
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
