/**
 * The phone's own X25519 key pair for the e2e tunnel: made once, kept in localStorage (the machine
 * registers its public half when the phone pairs). Without storage it lasts for this page only.
 */
import { generateKeyPair, parseKeyPair, type KeyPairText } from '../tunnel';

const STORAGE_KEY = 'remote-assistant.client-key';

export function loadClientKeyPair(storage: Storage = window.localStorage): KeyPairText {
  try {
    const stored = parseKeyPair(JSON.parse(storage.getItem(STORAGE_KEY) ?? 'null'));
    if (stored) return stored;
  } catch {
    // Corrupt or unavailable: make a new one.
  }
  const fresh = generateKeyPair();
  try {
    storage.setItem(STORAGE_KEY, JSON.stringify(fresh));
  } catch {
    // Private mode without storage.
  }
  return fresh;
}
