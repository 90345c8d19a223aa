import { firstUnits } from '../../protocol/code-points';

/**
 * This phone page install as a push device (docs/protocol.md, "Web Push"): a random id kept in
 * localStorage, and a name the user can change (by default what the browser says it is, e.g.
 * "Android Chrome"), so the devices can be told apart in list_push_devices.
 */
const ID_KEY = 'remote-assistant.device-id';
const NAME_KEY = 'remote-assistant.device-name';

export function deviceId(): string {
  let id = localStorage.getItem(ID_KEY);
  if (!id) {
    id = randomUuid();
    localStorage.setItem(ID_KEY, id);
  }
  return id;
}

export function deviceName(): string {
  return localStorage.getItem(NAME_KEY) || defaultDeviceName(navigator.userAgent);
}

export function saveDeviceName(name: string): string {
  const trimmed = firstUnits(name.trim(), 100);
  if (trimmed) localStorage.setItem(NAME_KEY, trimmed);
  else localStorage.removeItem(NAME_KEY);
  return deviceName();
}

/** "Android Chrome", "iPhone Safari", "Windows Firefox"...: system, then browser, from the user agent. */
export function defaultDeviceName(userAgent: string): string {
  const system = /iPhone/.test(userAgent)
    ? 'iPhone'
    : /iPad/.test(userAgent)
      ? 'iPad'
      : /Android/.test(userAgent)
        ? 'Android'
        : /Windows/.test(userAgent)
          ? 'Windows'
          : /Mac OS X|Macintosh/.test(userAgent)
            ? 'Mac'
            : /Linux|X11/.test(userAgent)
              ? 'Linux'
              : 'Browser';
  const browser = /Edg\//.test(userAgent)
    ? 'Edge'
    : /SamsungBrowser/.test(userAgent)
      ? 'Samsung Internet'
      : /Firefox|FxiOS/.test(userAgent)
        ? 'Firefox'
        : /Chrome|CriOS|Chromium/.test(userAgent)
          ? 'Chrome'
          : /Safari/.test(userAgent)
            ? 'Safari'
            : '';
  return browser ? `${system} ${browser}` : system;
}

/** crypto.randomUUID exists only in secure contexts; the LAN page (http) still needs an id for client_state. */
function randomUuid(): string {
  if (typeof crypto.randomUUID === 'function' && window.isSecureContext) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
