// Pairing a phone without the editor (README, "Pair a phone"): `serve` prints a pairing link while no
// device is paired, `pair` asks the running service for a fresh one. The link carries a one-time
// pairing secret, never the access token; the QR code is drawn only on a terminal.
import { parseArgs } from 'node:util';
import { askRunningService } from './cli-backup';
import { defaultDataDir } from './platform/paths';

// Required when a QR code is drawn (a terminal), not at every start: its module takes milliseconds to load.
const qrcode = () => require('qrcode') as typeof import('qrcode');

/** What the terminal shows for a pairing link: the link, and its QR code when stdout is a terminal. */
export async function pairingText(pairing: { link: string; expires_in: number }, tty: boolean): Promise<string> {
  const lines = [`pair a phone: open this link on it (works once, within ${Math.round(pairing.expires_in / 60)} minutes): ${pairing.link}`];
  if (tty) lines.push(await qrcode().toString(pairing.link, { type: 'terminal', small: true }));
  return lines.join('\n');
}

export async function pairCommand(args: string[], usage: string): Promise<number> {
  const { values } = parseArgs({ args, options: { 'data-dir': { type: 'string' }, port: { type: 'string' } } });
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port <= 65535)) {
    console.error(`invalid --port ${values.port}\n${usage}`);
    return 2;
  }
  const pairing = await askRunningService(values['data-dir'] ?? defaultDataDir(), port, { type: 'create_lan_pairing' }, 10_000);
  console.log(await pairingText(pairing, process.stdout.isTTY === true));
  return 0;
}
