import { stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { ToolError } from '../types';

/** `stat`, with a missing file as a ToolError that names the path as the model gave it. */
export async function statOrExplain(file: string, shown: string): Promise<Stats> {
  try {
    return await stat(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new ToolError(`${shown} does not exist`);
    if (code === 'EACCES' || code === 'EPERM') throw new ToolError(`${shown}: permission denied`);
    throw error;
  }
}
