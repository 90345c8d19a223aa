/**
 * Whether this page can receive notifications, and if not, what the user can do about it, said plainly
 * (issue 11: iOS needs the page added to the Home Screen and https; the LAN page over http cannot).
 */
export type PushAvailability = { available: true } | { available: false; reason: string };

export interface PushEnvironment {
  secureContext: boolean;
  serviceWorker: boolean;
  pushManager: boolean;
  notification: boolean;
  permission: NotificationPermission | undefined;
  /** An iPhone or iPad (iPadOS says it is a Mac, with touch). */
  ios: boolean;
  /** Opened from the Home Screen (display-mode standalone). */
  installed: boolean;
}

export const UNAVAILABLE = {
  insecure: 'Notifications need a secure page: use the relay link (https) for notifications. This page was opened over http on the local network.',
  iosNotInstalled: 'On iPhone and iPad, add this page to your Home Screen first (Share, then “Add to Home Screen”), then open it from there.',
  unsupported: 'This browser cannot receive notifications (no service worker or Push API).',
  denied: 'Notifications are blocked for this page. Allow them in the browser’s site settings, then come back here.',
} as const;

export function pushAvailability(env: PushEnvironment): PushAvailability {
  if (!env.secureContext) return { available: false, reason: UNAVAILABLE.insecure };
  const supported = env.serviceWorker && env.pushManager && env.notification;
  // iOS offers the Push API only to a page installed on the Home Screen.
  if (env.ios && !env.installed) return { available: false, reason: UNAVAILABLE.iosNotInstalled };
  if (!supported) return { available: false, reason: UNAVAILABLE.unsupported };
  if (env.permission === 'denied') return { available: false, reason: UNAVAILABLE.denied };
  return { available: true };
}

/** This browser, now. */
export function currentEnvironment(): PushEnvironment {
  const ua = navigator.userAgent;
  return {
    secureContext: window.isSecureContext,
    serviceWorker: 'serviceWorker' in navigator,
    pushManager: 'PushManager' in window,
    notification: 'Notification' in window,
    permission: 'Notification' in window ? Notification.permission : undefined,
    ios: /iPhone|iPad|iPod/.test(ua) || (/Macintosh/.test(ua) && navigator.maxTouchPoints > 1),
    installed: matchMedia('(display-mode: standalone)').matches || (navigator as { standalone?: boolean }).standalone === true,
  };
}
