import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { PairedDevice, PairingInfo, RelayLinkStatus } from '../protocol';
import { lanAddresses } from '../transport/pairing/lan-pairing';
import type { Backend, Envelope } from './backend';

/**
 * A one-time LAN pairing link from the service (`create_lan_pairing`: it names the address a phone can
 * reach, the same link `serve` and `pair` print), or undefined when it cannot be had. Never throws.
 */
export async function fetchLanPairingLink(backend: Requester | undefined): Promise<string | undefined> {
  try {
    const answer = await backend?.request({ type: 'create_lan_pairing' });
    return answer?.status === 'ok' ? (answer.data as { link: string }).link : undefined;
  } catch {
    return undefined;
  }
}

/** What the running service says about its relays, and a fresh one-time relay pairing (when a relay is configured). */
export interface RelayInfo {
  relays: RelayLinkStatus[];
  pairing?: PairingInfo;
  /** Why the service could not be asked (not running, refused...). */
  error?: string;
}

/** The part of a backend (extension/backend.ts) connection info needs: one command -> its envelope. */
export type Requester = Pick<Backend, 'request'>;

/**
 * Asks the service through this window's backend: in process through the service's door when this
 * window hosts it (a session of the owner, so no socket and no token), else over the attached window's
 * authenticated socket. `relay_status`, then `create_pairing` when a relay channel exists. Never throws.
 */
export async function fetchRelayInfo(backend: Requester | undefined, timeoutMs = 5_000): Promise<RelayInfo> {
  if (!backend) return { relays: [], error: 'the service is not running in any window' };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<RelayInfo>((resolve) => {
    timer = setTimeout(() => resolve({ relays: [], error: 'the service did not answer' }), timeoutMs);
  });
  try {
    return await Promise.race([askRelays(backend), late]);
  } finally {
    clearTimeout(timer);
  }
}

const refusal = (envelope: Envelope) => (envelope.status === 'error' ? envelope.error : 'refused');

async function askRelays(backend: Requester): Promise<RelayInfo> {
  try {
    const status = await backend.request({ type: 'relay_status' });
    if (status.status !== 'ok') return { relays: [], error: refusal(status) };
    const relays = (status.data as { relays?: RelayLinkStatus[] } | undefined)?.relays ?? [];
    if (relays.length === 0) return { relays };
    const pairing = await backend.request({ type: 'create_pairing' });
    if (pairing.status !== 'ok') return { relays, error: refusal(pairing) };
    return { relays, pairing: pairing.data as PairingInfo };
  } catch (error) {
    return { relays: [], error: (error as Error).message };
  }
}

/** The paired devices (`list_devices`), or undefined when the service cannot be asked. Never throws. */
export async function fetchDevices(backend: Requester | undefined): Promise<PairedDevice[] | undefined> {
  try {
    const answer = await backend?.request({ type: 'list_devices' });
    return answer?.status === 'ok' ? (answer.data as { devices: PairedDevice[] }).devices : undefined;
  } catch {
    return undefined;
  }
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const STATE_TEXT: Record<RelayLinkStatus['state'], string> = { connecting: 'connecting…', online: 'online', offline: 'offline' };

function relayLinkHtml(link: RelayLinkStatus): string {
  const detail = [
    link.state === 'online' ? `${link.clients} phone(s) connected` : '',
    link.last_error ? `last error: ${link.last_error}` : '',
    link.retry_at ? `next try ${new Date(link.retry_at).toLocaleTimeString()}` : '',
  ].filter(Boolean);
  return `<li><b>${escapeHtml(link.name)}</b> <code>${escapeHtml(link.url)}</code>: <span class="state ${link.state}">${STATE_TEXT[link.state]}</span>${detail.length ? `<br><small>${escapeHtml(detail.join(' · '))}</small>` : ''}</li>`;
}

// Required when the panel draws its QR code, not at activation: its module takes milliseconds to load.
const qr = (url: string) => (require('qrcode') as typeof import('qrcode')).toString(url, { type: 'svg', margin: 2, width: 240 });

export async function connectionInfoHtml(info: { port: number; addresses: string[]; lanPairingLink?: string; lanAccess: boolean; relay: RelayInfo; devices?: PairedDevice[] }): Promise<string> {
  const nonce = randomBytes(16).toString('base64');
  const lanQr = info.lanPairingLink ? await qr(info.lanPairingLink) : undefined;
  const relayQr = info.relay.pairing ? await qr(info.relay.pairing.pairing_url) : undefined;
  const list = (items: string[]) => (items.length ? `<ul>${items.map((i) => `<li><code>${escapeHtml(i)}</code></li>`).join('')}</ul>` : '<p>none</p>');
  const relaySection = info.relay.error
    ? `<p class="warn">Relay state unknown: ${escapeHtml(info.relay.error)}.</p>`
    : info.relay.relays.length
      ? `<ul>${info.relay.relays.map(relayLinkHtml).join('')}</ul>`
      : '<p>No relay configured. Add a channel <code>{"type":"websocket","url":"wss://…","auth_token":"…"}</code> to service.json to reach this machine from anywhere.</p>';
  const relayPairing =
    relayQr && info.relay.pairing
      ? `<h3>Pair your phone from anywhere (relay, end-to-end encrypted)</h3>
<p>Scan with the phone's camera. The code works once, within ${Math.round(info.relay.pairing.expires_in / 60)} minutes; the relay never sees your messages or token.</p>
<div class="qr">${relayQr}</div>`
      : '';
  return `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'nonce-${nonce}';">
<style nonce="${nonce}">body{font-family:var(--vscode-font-family);padding:1em} .qr{background:#fff;display:inline-block;padding:8px} .warn{color:var(--vscode-editorWarning-foreground)} .state.online{color:var(--vscode-testing-iconPassed)} .state.offline{color:var(--vscode-errorForeground)}</style>
<title>Connection Info</title></head><body>
<h2>Remote Assistant: connection info</h2>
<p>Port <b>${info.port}</b>. WebSocket on this machine: <code>ws://127.0.0.1:${info.port}/ws</code></p>
<h3>LAN address(es)</h3>${list(info.addresses.map((a) => `ws://${a}:${info.port}/ws`))}
${info.lanAccess ? '' : '<p class="warn">LAN access is off (setting <code>remoteAssistant.lanAccess</code>): only this machine can connect.</p>'}
<h3>Relay</h3>${relaySection}
${relayPairing}
${devicesHtml(info.devices)}
<h3>Pair your phone on this network</h3>
${
  lanQr
    ? `<p>Scan with the phone's camera. The code works once, within 10 minutes; the phone gets its own credential, which you can revoke (Remote Assistant: Manage Devices).</p>
<div class="qr">${lanQr}</div>`
    : '<p class="warn">No pairing code: the service did not answer.</p>'
}
<p>Use the notification's buttons to copy the access token (for scripts) or a pairing link.</p>
</body></html>`;
}

function devicesHtml(devices: PairedDevice[] | undefined): string {
  if (!devices) return '';
  const rows = devices.map(
    (d) => `<li>${escapeHtml(d.device_name)} <small>(${d.via === 'relay' ? 'relay' : 'LAN'}, last seen ${d.last_seen ? escapeHtml(new Date(d.last_seen).toLocaleString()) : 'never'})</small></li>`,
  );
  return `<h3>Paired devices</h3>${rows.length ? `<ul>${rows.join('')}</ul>` : '<p>none</p>'}<p>Revoke a lost phone with <b>Remote Assistant: Manage Devices</b>.</p>`;
}

export async function showConnectionInfo(info: { port: number; token: string; lanAccess: boolean }, backend: Requester | undefined): Promise<vscode.WebviewPanel> {
  const panel = vscode.window.createWebviewPanel('remoteAssistant.connectionInfo', 'Remote Assistant: Connection Info', vscode.ViewColumn.Active, { enableScripts: false, localResourceRoots: [] });
  const addresses = lanAddresses();
  const [relay, lanPairingLink, devices] = await Promise.all([fetchRelayInfo(backend), fetchLanPairingLink(backend), fetchDevices(backend)]);
  panel.webview.html = await connectionInfoHtml({ ...info, addresses, relay, lanPairingLink, devices });
  const online = relay.relays.filter((r) => r.state === 'online').length;
  const relayText = relay.relays.length ? `; relay ${online}/${relay.relays.length} online` : '';
  const choices = ['Copy Token', ...(lanPairingLink ? ['Copy Pairing URL'] : []), ...(relay.pairing ? ['Copy Relay Pairing URL'] : [])];
  void vscode.window.showInformationMessage(`Remote Assistant listens on port ${info.port}${addresses.length ? ` (${addresses.join(', ')})` : ''}${relayText}.`, ...choices).then(async (choice) => {
    if (choice === 'Copy Token') await vscode.env.clipboard.writeText(info.token);
    if (choice === 'Copy Pairing URL' && lanPairingLink) await vscode.env.clipboard.writeText(lanPairingLink);
    if (choice === 'Copy Relay Pairing URL' && relay.pairing) await vscode.env.clipboard.writeText(relay.pairing.pairing_url);
  });
  return panel;
}
