import * as vscode from 'vscode';
import type { PairedDevice } from '../protocol';
import { call } from './backend';
import type { Requester } from './connection-info';

const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : 'never');

/**
 * "Remote Assistant: Manage Devices": the paired phones (each with its own credential), and revoking
 * one (a lost phone): its sockets close at once and its credential and push subscription end.
 */
export async function manageDevices(backend: Requester | undefined): Promise<void> {
  if (!backend) throw new Error('the service is not running in any window');
  const { devices } = await call(backend, { type: 'list_devices' });
  if (devices.length === 0) {
    void vscode.window.showInformationMessage('Remote Assistant: no paired device. Pair a phone with Show Connection Info.');
    return;
  }
  const picked = await vscode.window.showQuickPick(
    devices.map((device: PairedDevice) => ({
      label: device.device_name,
      description: `${device.via === 'relay' ? 'relay' : 'LAN'} · notifications ${device.push ? 'on' : 'off'}`,
      detail: `paired ${when(device.paired_at)} · last seen ${when(device.last_seen)}`,
      device,
    })),
    { title: 'Remote Assistant: paired devices (pick one to revoke)', matchOnDescription: true },
  );
  if (!picked) return;
  const confirm = `Revoke ${picked.device.device_name}`;
  const answer = await vscode.window.showWarningMessage(`Revoke “${picked.device.device_name}”? It is disconnected at once and must be paired again.`, { modal: true }, confirm);
  if (answer !== confirm) return;
  await call(backend, { type: 'revoke_device', device_id: picked.device.device_id });
  void vscode.window.showInformationMessage(`Remote Assistant: ${picked.device.device_name} revoked.`);
}
