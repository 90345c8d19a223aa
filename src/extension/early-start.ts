// Imported first by extension.ts, so that it runs before the rest of the bundle's modules load: when the
// window hosts the service (`autoStart`), its thread starts now (service-thread/early-thread.ts), beside the
// loading of extension.js. Kept to what that needs: the settings' section, not the protocol's schemas.
import * as vscode from 'vscode';
import { startEarly } from '../service-thread/early-thread';
import { autoStartOf, SETTINGS_SECTION } from './settings-section';

/** When the extension's code began loading (performance.now()): the editor's log tells listening from here too. */
export const loadBegan = performance.now();

if (autoStartOf(vscode.workspace.getConfiguration(SETTINGS_SECTION))) startEarly();
