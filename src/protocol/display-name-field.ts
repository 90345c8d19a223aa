import * as z from 'zod';
import { displayName } from './display-name';

/**
 * A name field of a command, cleaned at the edge (displayName, then trimmed) and then checked: a name
 * made only of hidden characters is empty, and refused as such.
 */
export function displayNameField(field: string, max: number) {
  return z
    .string({ error: `${field} must be a string` })
    .transform((value) => displayName(value).trim())
    .pipe(
      z
        .string()
        .min(1, { error: `${field} must not be empty` })
        .max(max, { error: `${field} must be at most ${max} characters` }),
    );
}
