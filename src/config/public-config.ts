import { endpointWithoutCredentials } from '../log/redact';
import type { PublicConfig, ServiceConfig } from '../protocol';

/** What get_config shows of the configuration (no secret: api_key_set, a base URL without its credentials). */
export function publicConfigOf(config: ServiceConfig): PublicConfig {
  return {
    provider: config.provider,
    model: config.model,
    temperature: config.temperature,
    permission_mode: config.permission_mode,
    // A gateway's key may sit in the URL; every client (session users too) may read get_config.
    base_url: config.base_url === undefined ? null : endpointWithoutCredentials(config.base_url),
    api_key_set: Boolean(config.api_key),
    permission_rules: { allow: [...config.permission_rules.allow], deny: [...config.permission_rules.deny] },
    permission_timeout_seconds: config.permission_timeout_seconds,
    system_prompt_mode: config.system_prompt_mode,
  };
}
