/**
 * Installs the service worker (media/sw.js, beside the page: its scope is the page's folder). Without
 * it no push can reach this device, so it is registered on every start; where service workers are
 * missing (an http LAN page is not a secure context) nothing happens and the Notifications section
 * says why (availability.ts).
 */
export function registerPushWorker(machineSlot?: string): Promise<ServiceWorkerRegistration | undefined> {
  if (!window.isSecureContext || !('serviceWorker' in navigator)) return Promise.resolve(undefined);
  // One paired machine's own registration: a push subscription holds one VAPID key, and each machine has
  // its own; its notifications open the page on that machine (push-worker.ts, `machine=`).
  const options = machineSlot ? { scope: `./machine/${machineSlot}/` } : undefined;
  return navigator.serviceWorker.register('sw.js', options).catch((error: unknown) => {
    console.warn('service worker not installed', error);
    return undefined;
  });
}
