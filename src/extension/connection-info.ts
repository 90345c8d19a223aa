import { networkInterfaces } from 'node:os';
import { randomBytes } from 'node:crypto';
import QRCode from 'qrcode';
import * as vscode from 'vscode';

/** The machine's IPv4 addresses a phone on the LAN can reach (no loopback, no link-local). */
export function lanAddresses(): string[] {
  const out: string[] = [];
  for (const entries of Object.values(networkInterfaces())) {
    for (const e of entries ?? []) if (e.family === 'IPv4' && !e.internal && !e.address.startsWith('169.254.')) out.push(e.address);
  }
  return out;
}

/** The phone's pairing link: the page served by the service, the socket and the token in the fragment (never sent to a server). */
export function pairingUrl(host: string, port: number, token: string): string {
  return `http://${host}:${port}/phone.html#url=${encodeURIComponent(`ws://${host}:${port}/ws`)}&token=${encodeURIComponent(token)}`;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export async function connectionInfoHtml(info: { port: number; addresses: string[]; relayUrls: string[]; token: string; lanAccess: boolean; cspSource: string }): Promise<string> {
  const nonce = randomBytes(16).toString('base64');
  const host = info.addresses[0] ?? '127.0.0.1';
  const url = pairingUrl(host, info.port, info.token);
  const svg = await QRCode.toString(url, { type: 'svg', margin: 2, width: 240 });
  const list = (items: string[]) => (items.length ? `<ul>${items.map((i) => `<li><code>${escapeHtml(i)}</code></li>`).join('')}</ul>` : '<p>none</p>');
  return `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'nonce-${nonce}';">
<style nonce="${nonce}">body{font-family:var(--vscode-font-family);padding:1em} .qr{background:#fff;display:inline-block;padding:8px} .warn{color:var(--vscode-editorWarning-foreground)}</style>
<title>Connection Info</title></head><body>
<h2>Remote Assistant: connection info</h2>
<p>Port <b>${info.port}</b>. WebSocket on this machine: <code>ws://127.0.0.1:${info.port}/ws</code></p>
<h3>LAN address(es)</h3>${list(info.addresses.map((a) => `ws://${a}:${info.port}/ws`))}
${info.lanAccess ? '' : '<p class="warn">LAN access is off (setting <code>remoteAssistant.lanAccess</code>): only this machine can connect.</p>'}
<h3>Relay</h3>${list(info.relayUrls)}
<h3>Pair your phone</h3><p>Scan with the phone's camera (it holds the access token: do not share it).</p>
<div class="qr">${svg}</div>
<p>Use the notification's "Copy Token" to copy the access token.</p>
</body></html>`;
}

export async function showConnectionInfo(info: { port: number; relayUrls: string[]; token: string; lanAccess: boolean }): Promise<vscode.WebviewPanel> {
  const panel = vscode.window.createWebviewPanel('remoteAssistant.connectionInfo', 'Remote Assistant: Connection Info', vscode.ViewColumn.Active, { enableScripts: false, localResourceRoots: [] });
  const addresses = lanAddresses();
  panel.webview.html = await connectionInfoHtml({ ...info, addresses, cspSource: panel.webview.cspSource });
  void vscode.window.showInformationMessage(`Remote Assistant listens on port ${info.port}${addresses.length ? ` (${addresses.join(', ')})` : ''}.`, 'Copy Token', 'Copy Pairing URL').then(async (choice) => {
    if (choice === 'Copy Token') await vscode.env.clipboard.writeText(info.token);
    if (choice === 'Copy Pairing URL') await vscode.env.clipboard.writeText(pairingUrl(addresses[0] ?? '127.0.0.1', info.port, info.token));
  });
  return panel;
}
