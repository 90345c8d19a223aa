import type { ConfigFile } from './config-file';

/** Private networks a phone on the same LAN connects from (allow_from patterns). */
export const LAN_PATTERNS = ['127.0.0.1', '::1', '192.168.*.*', '10.*.*.*', ...Array.from({ length: 16 }, (_, i) => `172.${16 + i}.*.*`)];
const LOOPBACK_PATTERNS = ['127.0.0.1', '::1'];

/**
 * The `remoteAssistant.lanAccess` setting, applied to service.json's tcp channel (either form of
 * `channels`). Returns whether the file changed (the service must then restart to rebind).
 */
export async function applyLanAccess(config: ConfigFile, enabled: boolean): Promise<boolean> {
  const changed = await config.edit((raw) => {
    const wanted = enabled ? LAN_PATTERNS : LOOPBACK_PATTERNS;
    const channels = raw.channels;
    if (Array.isArray(channels)) {
      const tcp = channels.find((c) => c && typeof c === 'object' && (c as { type?: unknown }).type === 'tcp') as Record<string, unknown> | undefined;
      if (tcp) tcp.allow_from = wanted;
      else if (enabled) channels.push({ name: 'lan', type: 'tcp', allow_from: wanted });
    } else if (channels && typeof channels === 'object') {
      const entries = channels as Record<string, Record<string, unknown>>;
      const tcp = Object.values(entries).find((c) => c && c.type === 'tcp');
      if (tcp) tcp.allow_from = wanted;
      else if (enabled) entries.lan = { type: 'tcp', allow_from: wanted };
    } else if (enabled) {
      raw.channels = [{ name: 'lan', type: 'tcp', allow_from: wanted }];
    }
  });
  return changed.length > 0;
}
